/**
 * Unique users by date bucket from the weeks: the `event_user_weeks` projection of `events`
 * (schema/091) keeps, per (organization, week, known user), the hours of that week the user had an
 * event in, as a 168-bit mask (bit h: hour h of the week; weeks and hours count from the Unix
 * epoch, UTC). The engine keeps it exact under inserts, merges and user deletions, like the hours.
 * A histogram with unique users (one timestamp level, no filters) reads:
 * - the counts (doc_count, and the anonymous events: each has its own user id, so each is one
 *   user) from the hours (hours.ts);
 * - the known users from one row per user and week (a few per user instead of one per event):
 *   a user is in a bucket when its mask meets the bucket's WHOLE hours of that week (the masks of
 *   the buckets' whole hours, week by week, are computed here and sent as parameters), or when
 *   one of its events lies in a PARTIAL hour of the bucket (read from the rows, as for the
 *   counts). The buckets of a user over every week and the partial hours are OR-ed into one
 *   100-bit set per user, so a user counts once per bucket and once in the total.
 * The whole and partial hours are those of hours.ts: every event in selection is counted once, in the
 * bucket of its instant. One query reads both parts (one snapshot of the table).
 */
import { ParamBag, compiled, type CompiledQuery } from '../../clickhouse/sql.ts';
import { bucketIndex, MICROS_PER_HOUR, type HistogramPlan } from '../../query/histogram.ts';
import { bucketIndexSql } from '../../query/histogram-sql.ts';
import { HOUR_SECONDS_SQL, hoursSource, planEdges, secondsOf, splitSelectionHours, type HourSplit } from './hours.ts';
import { EventSource, type EventSelection } from './source.ts';
import { NIL_UUID } from '../../uuid.ts';

const HOURS_PER_WEEK = 168n;
/** The projection's keys and mask, written as in schema/091 so that the engine matches them. */
const WEEK_SQL = 'intDiv(toUnixTimestamp(timestamp), 604800)';
const WEEK_USER_SQL = `if(anonymous = 1, toUUID('${NIL_UUID}'), user_id)`;
const HOUR_BIT_SQL = 'bitShiftLeft(toUInt256(1), intDiv(toUnixTimestamp(timestamp), 3600) % 168)';
/** Above this many weeks of whole hours (about 19 years) the rows answer: the masks would outgrow the parameters. */
export const MAX_MASK_WEEKS = 1000;

/** The buckets' whole hours, week by week: week w (weeks since the epoch), bucket b, mask of its hours in w. */
export interface WeekMasks {
  weeks: number[];
  buckets: number[][];
  masks: bigint[][];
}

/**
 * For every week holding whole hours of the split inside the series: each bucket with whole hours
 * in that week and the bits of those hours. undefined when the whole hours are unbounded or span
 * more than MAX_MASK_WEEKS weeks.
 */
export function weekMasks(plan: HistogramPlan, split: HourSplit): WeekMasks | undefined {
  if (plan.starts.length === 0) return { weeks: [], buckets: [], masks: [] };
  const ceilHour = (t: bigint) => -floorDiv(-t, MICROS_PER_HOUR) * MICROS_PER_HOUR;
  const from = max(split.from ?? ceilHour(plan.start), ceilHour(plan.start));
  const to = min(split.to ?? floorDiv(plan.boundary, MICROS_PER_HOUR) * MICROS_PER_HOUR, plan.boundary);
  if (to <= from) return { weeks: [], buckets: [], masks: [] };
  if ((to - from) / MICROS_PER_HOUR / HOURS_PER_WEEK > BigInt(MAX_MASK_WEEKS)) return undefined;
  const partial = new Set(split.partial);
  const byWeek = new Map<bigint, Map<number, bigint>>();
  for (let h = from; h + MICROS_PER_HOUR <= to; h += MICROS_PER_HOUR) {
    if (partial.has(h)) continue;
    const bucket = bucketIndex(plan, h);
    if (bucket === null) continue;
    const hour = floorDiv(h, MICROS_PER_HOUR);
    const week = floorDiv(hour, HOURS_PER_WEEK);
    const buckets = byWeek.get(week) ?? new Map<number, bigint>();
    byWeek.set(week, buckets);
    buckets.set(bucket, (buckets.get(bucket) ?? 0n) | (1n << (hour - week * HOURS_PER_WEEK)));
  }
  const weeks = [...byWeek.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    weeks: weeks.map(Number),
    buckets: weeks.map((w) => [...byWeek.get(w)!.keys()]),
    masks: weeks.map((w) => [...byWeek.get(w)!.values()]),
  };
}

/**
 * The selection and rules the weeks answer: unique users over one timestamp level, no filters and no
 * cohort (the weeks know neither an event's type and name nor the cohort's users).
 */
export function weeksServe(selection: EventSelection, levels: number, plan: HistogramPlan | undefined): plan is HistogramPlan {
  return levels === 1 && plan !== undefined && selection.filters.length === 0 && !selection.cohort && plan.starts.length <= 128;
}

/**
 * The bucket rows (depth 0 and 1, as the ranked-bucket query gives them: every bucket of a single
 * date level is kept) with doc_count and unique_users; undefined when the weeks cannot answer.
 */
export function compileUsersFromWeeks(selection: EventSelection, plan: HistogramPlan): CompiledQuery | undefined {
  const edges = planEdges([plan]);
  const split = splitSelectionHours(selection, edges);
  const masks = weekMasks(plan, split);
  if (!masks) return undefined;
  const bag = new ParamBag();
  const source = new EventSource(selection, bag);
  const counts = hoursSource(source, edges, split);
  const countBucket = bucketIndexSql('t', plan, bag, 'count_bucket');
  const bit = (bucket: string) => `bitShiftLeft(toUInt128(1), ${bucket})`;

  const parts: string[] = [];
  if (masks.weeks.length) {
    const weeks = bag.add(masks.weeks, 'Array(UInt32)');
    const buckets = bag.add(masks.buckets, 'Array(Array(UInt8))');
    const bucketMasks = bag.add(masks.masks, 'Array(Array(UInt256))');
    // GROUP BY the projection's keys, so that the engine answers it from event_user_weeks.
    const perWeek =
      `SELECT ${WEEK_SQL} AS week, ${WEEK_USER_SQL} AS user, groupBitOr(${HOUR_BIT_SQL}) AS hours ` +
      `${source.org.from('events')} AND anonymous = 0 AND ${WEEK_SQL} >= ${bag.add(masks.weeks[0], 'UInt32')} ` +
      `AND ${WEEK_SQL} <= ${bag.add(masks.weeks[masks.weeks.length - 1], 'UInt32')} GROUP BY ${WEEK_SQL}, ${WEEK_USER_SQL}`;
    const inBuckets = `arrayReduce('groupBitOr', arrayMap((m, b) -> if(bitAnd(hours, m) != 0, ${bit('b')}, toUInt128(0)), ${bucketMasks}[i], ${buckets}[i]))`;
    parts.push(`SELECT user, ${inBuckets} AS buckets FROM (${perWeek}) ARRAY JOIN [indexOf(${weeks}, week)] AS i`);
  }
  if (split.partial.length) {
    const rowBucket = bucketIndexSql('timestamp', plan, bag, 'row_bucket');
    parts.push(
      `SELECT user_id AS user, ${bit(`assumeNotNull(${rowBucket})`)} AS buckets ${source.from()} AND anonymous = 0 ` +
      `AND ${HOUR_SECONDS_SQL} IN ${bag.add(split.partial.map(secondsOf), 'Array(Int64)')}`,
    );
  }
  const TOTAL = 128;
  const branches = [
    `SELECT depth, if(depth = 0, NULL, ${countBucket}) AS k1, n AS doc, if(anonymous = 1, n, 0) AS users ${counts} ARRAY JOIN [0, 1] AS depth`,
  ];
  if (parts.length) {
    const perUser = `SELECT groupBitOr(buckets) AS user_buckets FROM (${parts.join(' UNION ALL ')}) GROUP BY user HAVING user_buckets != 0`;
    branches.push(
      `SELECT toUInt8(b != ${TOTAL}) AS depth, if(b = ${TOTAL}, NULL, toInt64(b)) AS k1, toUInt64(0) AS doc, toUInt64(1) AS users ` +
      `FROM (${perUser}) ARRAY JOIN arrayConcat([toUInt64(${TOTAL})], bitPositionsToArray(user_buckets)) AS b`,
    );
  }
  return compiled(
    `SELECT depth, k1, sum(doc) AS doc_count, toUInt64(0) AS other_doc_count, sum(users) AS unique_users ` +
    `FROM (${branches.join(' UNION ALL ')}) GROUP BY depth, k1 ORDER BY depth, k1`,
    bag,
  );
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && (a < 0n) !== (b < 0n) ? q - 1n : q;
}
const max = (a: bigint, b: bigint) => (a > b ? a : b);
const min = (a: bigint, b: bigint) => (a < b ? a : b);
