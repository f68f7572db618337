/**
 * Pure compiler of a funnel: request nodes -> one query whose rows are, per group (the whole, each
 * split cohort) and breakdown value, the users who reached each step and the median and p90 of
 * their time from the previous step.
 *
 * Per user, the events in range that match a step (every event, in strict order) are sorted in
 * the event order of the service (timestamp, then reception: received_at, seq), each with the bit
 * mask of the steps it matches (packed into one integer key, which sorts fastest). Then one pass per step over that array, each a few
 * array functions of the engine (arrayFill, arrayMap, arrayFirst: vectorized, no per-event
 * lambda state):
 *
 * ordered: s_j[p] = the latest start (step-1 time) of a chain reaching step j with events up to
 *   position p, e_j[p] the time of its step j (0: none). An event at p extends a chain when it
 *   matches step j and the chain to step j-1 built before p (shifted by one: an event is never
 *   two steps of one chain) started at most the window before it. The latest start is kept
 *   because a later start can only leave more room for the next steps, so the user reached step
 *   j iff some event extends; T_j is the first such event's time (the first time the user
 *   reached step j), P_j = e_{j-1} just before it, the latest step j-1 of a chain that reaches
 *   step j at T_j: the time from the previous step is T_j - P_j.
 * strict: the same chains, but a chain to step j-1 must end at the event just before p (no other
 *   event of the user between two steps), so nothing is carried forward.
 * any: l_j[p] = the latest time of an event of step j up to p; steps 1..i are done within the
 *   window at p when every l_j (j <= i) is at most the window before the event at p. Every window
 *   can be slid to end at an event, so checking at each event is exact. There is no previous
 *   step in any order: no times.
 *
 * The window is inclusive: the last step at exactly `window` after the first still converts.
 */
import { ParamBag, compiled, type CompiledQuery } from '../../clickhouse/sql.ts';
import { propertyValue } from '../read/compile.ts';
import { PERIODS, analysisSource, groupsSql, perUserSql, scanUserColumns, stepSql, type AnalysisSelection, type Period, type StepNode } from './steps.ts';

export const FUNNEL_ORDERS = ['ordered', 'strict', 'any'] as const;
export type FunnelOrder = (typeof FUNNEL_ORDERS)[number];

export type FunnelBreakdown = { readonly field: 'property'; readonly propertyKey: string } | { readonly field: 'timestamp'; readonly interval: Period };

export interface FunnelQuery extends AnalysisSelection {
  steps: readonly StepNode[];
  windowMs: number;
  order: FunnelOrder;
  breakdown?: FunnelBreakdown;
  /** Breakdown values kept per group: the most users at the first step (property), the earliest (timestamp). */
  maxBuckets: number;
}

/** One result row: group 0 is the whole, g the g-th split cohort; `bv` the breakdown value. */
export interface FunnelRow {
  grp: number;
  /** [kind, text]: 1 a value (a property value or a period start), 0 no value, 2 the whole; absent without a breakdown. */
  bv?: [number, string];
  /** u1..uN: users per step; qJ: [median, p90] ms from step J-1, for J >= 2 (not in `any` order). */
  [column: string]: unknown;
}

const shift = (a: string) => `arrayPushFront(arrayPopBack(${a}), 0)`;
const fill = (a: string) => `arrayFill(x -> x != 0, ${a})`;
const bit = (j: number) => `bitTest(m, ${j - 1})`;

/**
 * The breakdown value of an event, as (kind, text): (1, text) for a property with a value
 * (strings by value, other JSON values by their JSON text, as the aggregation's property levels)
 * or a period start, (0, '') for an event without the property. WHOLE is the row of the whole
 * funnel, computed beside the values.
 */
function breakdownValueSql(b: FunnelBreakdown): string {
  if (b.field === 'timestamp') return `(toUInt8(1), toString(${PERIODS[b.interval].start}(timestamp)))`;
  const json = propertyValue(b.propertyKey);
  return `if(${json.isNull}, (toUInt8(0), ''), (toUInt8(1), assumeNotNull(${json.key})))`;
}
const WHOLE = `(toUInt8(2), '')`;

/** Stage columns carried from stage to stage. */
function carry(upTo: number, withTimes: boolean): string {
  const cols = ['user_id', 'user_alias', 'anonymous', 'bv', 'ts', 'ms'];
  for (let j = 1; j <= upTo; j++) cols.push(`T${j}`, ...(withTimes ? [`P${j}`] : []));
  return cols.join(', ');
}

/** The step stages of `order` over rows (user_id, user_alias, anonymous, bv, ts, ms): adds T1..Tk (and P1..Pk). */
function levelStages(from: string, k: number, order: FunnelOrder, windowParam: string): string {
  let src = from;
  if (order === 'any') {
    // ok_j: the latest event of step j is within the window before this event; c_i: steps 1..i all are.
    src = `SELECT *, ${fill(`arrayMap((m, t) -> if(${bit(1)}, t, 0), ms, ts)`)} AS l1, ` +
      `arrayMap((t, l) -> l != 0 AND t - l <= ${windowParam}, ts, l1) AS c1, arrayFirst((t, c) -> c, ts, c1) AS T1 FROM (${src})`;
    for (let j = 2; j <= k; j++) {
      src = `SELECT ${carry(j - 1, false)}, c${j - 1}, ` +
        `${fill(`arrayMap((m, t) -> if(${bit(j)}, t, 0), ms, ts)`)} AS l${j}, ` +
        `arrayMap((c, t, l) -> c AND l != 0 AND t - l <= ${windowParam}, c${j - 1}, ts, l${j}) AS c${j}, ` +
        `arrayFirst((t, c) -> c, ts, c${j}) AS T${j} FROM (${src})`;
    }
    return src;
  }
  // s1: the start of the chain reaching step 1 at each position (ordered: the latest step-1 event so
  // far; strict: this event, when it is one). Level 1's end is its start.
  const s1 = `arrayMap((m, t) -> if(${bit(1)}, t, 0), ms, ts)`;
  src = `SELECT *, ${order === 'ordered' ? fill(s1) : s1} AS s1, s1 AS e1, arrayFirst((t, m) -> ${bit(1)}, ts, ms) AS T1, T1 AS P1 FROM (${src})`;
  for (let j = 2; j <= k; j++) {
    // u: the event at p extends the chain to step j-1 that ended just before p.
    const u = `arrayMap((m, t, s) -> ${bit(j)} AND s != 0 AND t - s <= ${windowParam}, ms, ts, sp)`;
    const next = order === 'ordered'
      ? `${fill(`arrayMap((u, s) -> if(u, s, 0), u, sp)`)} AS s${j}, ${fill(`arrayMap((u, t) -> if(u, t, 0), u, ts)`)} AS e${j}`
      : `arrayMap((u, s) -> if(u, s, 0), u, sp) AS s${j}, arrayMap((u, t) -> if(u, t, 0), u, ts) AS e${j}`;
    src = `SELECT ${carry(j - 1, true)}, s${j}, e${j}, arrayFirst((t, u) -> u, ts, u) AS T${j}, arrayFirst((e, u) -> u, ep, u) AS P${j} ` +
      `FROM (SELECT *, ${next} FROM (SELECT *, ${shift(`s${j - 1}`)} AS sp, ${shift(`e${j - 1}`)} AS ep, ${u} AS u FROM (${src})))`;
  }
  return src;
}

export function compileFunnel(q: FunnelQuery): CompiledQuery {
  const bag = new ParamBag();
  const source = analysisSource(q, bag, q.range);
  const k = q.steps.length;
  const windowParam = bag.add(q.windowMs, 'Int64');
  const stepConds = q.steps.map((s) => stepSql(s, source));
  const mask = `toUInt16(${stepConds.map((c, i) => `if(${c}, ${1 << i}, 0)`).join(' + ')})`;
  const byOrder = q.order !== 'any';
  const bvExpr = q.breakdown ? breakdownValueSql(q.breakdown) : undefined;

  // The scan: the events of the steps (strict: every event of the users with a step-1 event), each
  // as one sortable key. Ordered and strict sort in the event order (timestamp, received_at, seq),
  // then by mask, which only decides between events that cannot be told apart otherwise (two
  // requests received in the same millisecond, same position) and gives the answer one value; any
  // order needs the timestamps only. Times are ms after 1970 below 2^44 (an event is at most 7 days
  // older than its reception; DateTime64 ends in 2299): key = t | r | seq | mask in 44+44+16+16 bits.
  const key = byOrder
    ? `bitShiftLeft(toUInt128(toUnixTimestamp64Milli(timestamp)), 76) + bitShiftLeft(toUInt128(toUnixTimestamp64Milli(received_at)), 32) + bitShiftLeft(toUInt128(seq), 16) + ${mask}`
    : `bitShiftLeft(toUInt64(toUnixTimestamp64Milli(timestamp)), 16) + ${mask}`;
  const cols = [scanUserColumns(q), `${key} AS k`, `${mask} AS m`, ...(bvExpr ? [`${bvExpr} AS v`] : [])];
  let where = source.where();
  if (q.order === 'strict') {
    const firstSteps = analysisSource(q, bag, q.range);
    where += ` AND user_id IN (SELECT user_id ${firstSteps.from()} AND ${stepSql(q.steps[0], firstSteps)})`;
  } else {
    where += ` AND (${stepConds.join(' OR ')})`;
  }
  const scan = `SELECT ${cols.join(', ')} FROM events WHERE ${where}`;
  // With a breakdown, each key with its event's value (sorted by key first).
  const item = bvExpr ? 'tuple(k, v)' : 'k';
  const keyOf = bvExpr ? 'x.1' : 'x';
  const tOf = `toInt64(bitShiftRight(${keyOf}, ${byOrder ? 76 : 16}))`;
  const mOf = `toUInt16(bitAnd(${keyOf}, 65535))`;
  // A user without a first step reaches nothing, in any order: such users (and anonymous events
  // of later steps) go no further than this.
  const users = perUserSql(q, scan, { known: `arraySort(groupArray(${item})) AS evs`, anonymousWhere: 'bitTest(m, 0)' });
  const started = `WHERE arrayExists(x -> bitTest(${mOf}, 0), evs)`;

  // One row per user (and breakdown value): times and masks; with a breakdown, step 1 counts only
  // the events of that value, so a user is in the funnel of each value they started from; and one
  // more row per user for the whole funnel.
  const perValue = bvExpr
    ? `SELECT user_id, user_alias, anonymous, bv, arrayMap(x -> ${tOf}, evs) AS ts, ` +
      `arrayMap(x -> if(bv.1 = 2 OR x.2 = bv, ${mOf}, bitAnd(${mOf}, 65534)), evs) AS ms FROM (SELECT * FROM (${users}) ${started}) ` +
      `ARRAY JOIN arrayPushFront(arrayDistinct(arrayMap(x -> x.2, arrayFilter(x -> bitTest(${mOf}, 0), evs))), ${WHOLE}) AS bv`
    : `SELECT user_id, user_alias, anonymous, 0 AS bv, arrayMap(x -> ${tOf}, evs) AS ts, arrayMap(x -> ${mOf}, evs) AS ms FROM (${users}) ${started}`;

  const levels = levelStages(perValue, k, q.order, windowParam);
  const out = ['grp', ...(bvExpr ? ['bv'] : [])];
  for (let j = 1; j <= k; j++) out.push(`countIf(T${j} != 0) AS u${j}`);
  if (byOrder) for (let j = 2; j <= k; j++) out.push(`quantilesExactInclusiveIf(0.5, 0.9)(T${j} - P${j}, T${j} != 0) AS q${j}`);
  const groupBy = bvExpr ? 'grp, bv' : 'grp';
  const rank = !bvExpr ? 'grp' : `grp, bv.1 = 2 DESC, ${q.breakdown!.field === 'timestamp' ? 'bv' : 'u1 DESC, bv'}`;
  const limit = bvExpr ? ` LIMIT ${bag.add(q.maxBuckets + 1, 'UInt32')} BY grp` : '';
  return compiled(
    `SELECT ${out.join(', ')} FROM (${levels}) ARRAY JOIN ${groupsSql(q, bag)} AS grp GROUP BY ${groupBy} ORDER BY ${rank}${limit}`,
    bag,
  );
}
