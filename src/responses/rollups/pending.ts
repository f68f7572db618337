/**
 * The pending-mark protocol of the rollups (schema/020-survey-rollups.sql), for its writers and its
 * readers alike: the one module that writes or reads survey_rollup_pending (docs/architecture.md,
 * "The rollups").
 *
 * Invariant: a slice row of survey_rollup is trusted only while the marks of its hours sum to 0.
 *   - A writer adds +1 to every hour slice it is about to change (addMarks) BEFORE it writes
 *     survey_responses, and its recompute takes the marks back (addMarks with -n) only AFTER the
 *     slices hold what survey_responses FINAL held when the recompute started.
 *   - `tallyhouse seed` and `rollups rebuild` mark the whole org with ORG_SENTINEL for their
 *     duration; a rebuild ends by taking back every mark of the org (takeBackAllMarksSql).
 *   - A reader answers the pending hours (and the days and months holding them) from
 *     survey_responses, and serves only rows of slices the set it read did not name, the set read
 *     no later than the slice rows (runWithPending): a slice that cannot be trusted is never served.
 * Marks are summed per slice (SummingMergeTree: merges drop the slices whose marks sum to 0), so
 * the order in which writers and recomputes add them does not matter.
 *
 * Each mark also names its owner (schema/130), the service process that added it, and sums to 0
 * per owner once that process has recomputed what it marked: a process that stopped or died with
 * marks left is taken over by another one, which recomputes its slices and takes back exactly its
 * marks (takeover.ts, owners.ts). Readers ignore owners. `seed` and `rebuild` mark as NO_OWNER.
 */
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { LRUCache } from 'lru-cache';
import { ParamBag, compiled, type CompiledQuery, type RunQuery } from '../../clickhouse/sql.ts';
import { TenantOrg } from '../../clickhouse/tenant.ts';
import { formatDbMicros, parseInstantMicros } from '../../time/iso.ts';
import { NIL_UUID } from '../../uuid.ts';
import { ORG_SENTINEL, type HourSlice } from './slices.ts';

/** The owner of marks no process takes over: `seed`, `rollups rebuild`, marks from before schema/130. */
export const NO_OWNER = NIL_UUID;

/** Past this many pending slices, a read treats the whole org as pending (survey_responses alone). */
export const MAX_PENDING_SLICES = 500;

export interface Pending {
  /** The whole org is pending (the sentinel, or more than MAX_PENDING_SLICES slices). */
  org: boolean;
  slices: HourSlice[];
}

/** Adds `marks` (+n before a write, -n once recomputed) to each slice's pending count, as `owner`. */
export async function addMarks(client: ClickHouseClient, orgId: string, deltas: readonly { slice: HourSlice; marks: number }[], owner = NO_OWNER): Promise<void> {
  if (deltas.length === 0) return;
  await client.insert({
    table: 'survey_rollup_pending',
    values: deltas.map((d) => ({ org_id: orgId, survey_id: d.slice.surveyId, hour: formatDbMicros(d.slice.hour), owner, pending: d.marks })),
    format: 'JSONEachRow',
    // Two writes mark the same slices with identical blocks, and both marks must count: a
    // replicated table (cluster mode) would otherwise drop the second as a duplicate insert.
    clickhouse_settings: { insert_deduplicate: 0 },
  });
}

/**
 * Takes back every mark of the org (the end of a rebuild, which has just recomputed every slice):
 * marks left by interrupted writes included, each owner's to 0.
 */
export async function takeBackAllMarks(client: ClickHouseClient, orgId: string, settings: ClickHouseSettings = {}): Promise<void> {
  const bag = new ParamBag();
  await client.command({
    query:
      'INSERT INTO survey_rollup_pending (org_id, survey_id, hour, owner, pending) ' +
      `SELECT org_id, survey_id, hour, owner, -sum(pending) ${new TenantOrg(orgId, bag).from('survey_rollup_pending')} GROUP BY org_id, survey_id, hour, owner HAVING sum(pending) != 0`,
    query_params: bag.toParams(),
    clickhouse_settings: settings,
  });
}

/** The marks of one owner that do not sum to 0, every org's: what taking the owner over takes back. */
export async function marksOf(client: ClickHouseClient, owner: string): Promise<{ orgId: string; slice: HourSlice; marks: number }[]> {
  const rs = await client.query({
    query:
      'SELECT toString(org_id) AS o, toString(survey_id) AS s, toString(hour) AS h, toString(sum(pending)) AS n FROM survey_rollup_pending ' +
      'WHERE owner = {owner:UUID} GROUP BY org_id, survey_id, hour HAVING sum(pending) != 0',
    query_params: { owner },
    format: 'JSONEachRow',
  });
  return (await rs.json<{ o: string; s: string; h: string; n: string }>()).map((r) => ({ orgId: r.o, slice: { surveyId: r.s, hour: parseInstantMicros(r.h)! }, marks: Number(r.n) }));
}

/** The org's pending slices as a relation (survey_id, hour). */
export function pendingSetSql(org: TenantOrg): string {
  return `SELECT survey_id, hour ${org.from('survey_rollup_pending')} GROUP BY survey_id, hour HAVING sum(pending) != 0`;
}

/** The rows of readPending's query, turned into the set. */
export function pendingOf(rows: readonly { s: string; h: string }[]): Pending {
  const slices = rows.map((r) => ({ surveyId: r.s, hour: parseInstantMicros(r.h)! }));
  const org = slices.length > MAX_PENDING_SLICES || slices.some((s) => s.surveyId === ORG_SENTINEL.surveyId && s.hour === ORG_SENTINEL.hour);
  return { org, slices: org ? [] : slices };
}

/** The slices whose maintenance is pending for the org: one small query on a table of in-flight marks. */
export async function readPending(run: RunQuery, orgId: string): Promise<Pending> {
  const bag = new ParamBag();
  const rows = await run<{ s: string; h: string }>(compiled(
    `SELECT toString(survey_id) AS s, toString(hour) AS h FROM (${pendingSetSql(new TenantOrg(orgId, bag))}) LIMIT ${MAX_PENDING_SLICES + 1}`,
    bag,
  ));
  return pendingOf(rows);
}

// --- reading the set beside the read, in its own query ---------------------------------------------

/**
 * The slices the sets this process read named lately, per org: the guess a read is compiled with
 * before it reads the set (runWithPending). Only spares a second query: correctness never depends
 * on it. A slice stays in the guess for GUESS_MS after a set last named it, so a slice whose marks
 * come and go under a trickle of writes keeps being read raw rather than sending every other read
 * to a second query; reading a slice raw is always exact.
 */
const GUESS_MS = 60_000;
/** Past this many slices, the guess is the last set read alone (each slice is a key range of the raw read). */
const MAX_GUESSED_SLICES = 32;
interface Seen {
  /** The last set read named the whole org (the sentinel, or too many slices): the next read reads the set first. */
  org: boolean;
  slices: Map<string, { slice: HourSlice; at: number }>;
  last: HourSlice[];
}
const seen = new LRUCache<string, Seen>({ max: 10_000 });
const sliceKey = (s: HourSlice) => `${s.surveyId.toLowerCase()}/${s.hour}`;

/** Records the set a read found for the org. */
function remember(orgId: string, set: Pending): void {
  const key = orgId.toLowerCase();
  const now = Date.now();
  const slices = seen.get(key)?.slices ?? new Map<string, { slice: HourSlice; at: number }>();
  for (const [k, e] of slices) if (now - e.at >= GUESS_MS) slices.delete(k);
  for (const slice of set.slices) slices.set(sliceKey(slice), { slice, at: now });
  seen.set(key, { org: set.org, slices, last: set.slices });
}

/** What the org's next read is compiled with; undefined: read the set first. */
function guessOf(orgId: string): Pending | undefined {
  const entry = seen.get(orgId.toLowerCase());
  if (!entry) return { org: false, slices: [] };
  if (entry.org) return undefined;
  const now = Date.now();
  const recent = [...entry.slices.values()].filter((e) => now - e.at < GUESS_MS).map((e) => e.slice);
  return { org: false, slices: recent.length <= MAX_GUESSED_SLICES ? recent : entry.last };
}

/** Whether a read compiled with `guess` served no slice that `set` names (reading more slices raw than needed is exact). */
export function coversPending(guess: Pending, set: Pending): boolean {
  if (guess.org) return true;
  if (set.org) return false;
  const names = new Set(guess.slices.map(sliceKey));
  return set.slices.every((s) => names.has(sliceKey(s)));
}

/**
 * A read that names its result columns: checkedSql then carries the set as the first branch of a
 * UNION ALL rather than through a join. On the mark rows a NULL stands in for each column (numbers,
 * strings, enums, UUIDs), or the expression `standIns` gives for it: a column whose type cannot be
 * Nullable (a Map, an Array, a Tuple) needs one whose type the column's is a supertype of, e.g.
 * `map()` (Map(Nothing, Nothing)) for a Map.
 */
export interface NamedRead extends CompiledQuery {
  readonly columns?: readonly string[];
  readonly standIns?: Readonly<Record<string, string>>;
}

/** The columns checkedSql adds to each row of a read. */
interface SetColumns {
  /** 1 on the read's rows; 0 on the one row that carries the set when the read has none. */
  read_row: number;
  pending_surveys: string[];
  pending_hours: string[];
}

/** The columns of checkedSql's UNION ALL form: 0 and a mark row of the org's, or 1 and a row of the read. */
interface MarkRowColumns {
  read_row: number;
  mark_survey: string;
  mark_hour: string;
  mark_pending: number | string;
}

/**
 * Mark rows the UNION ALL form carries at most. survey_rollup_pending sums a slice's marks only
 * when it merges, so a slice can have a row per write and per take-back until then; past this many
 * rows the set is read first, on its own, summed by the engine (readPending).
 */
export const MAX_MARK_ROWS = 4 * (MAX_PENDING_SLICES + 1);

/**
 * The read `q` with the org's pending set beside each of its rows, in ONE query:
 * `SELECT read.*, <set> FROM (<set>) AS marks LEFT JOIN (SELECT 1 AS read_row, * FROM (<q>)) AS read ON true`
 * (LEFT: a read without rows still brings the set, on a row whose read_row is 0).
 *
 * The set is the first table expression of the query's FROM: the engine takes the parts of the
 * tables a query reads while it analyses the query, its FROM left to right, so it takes
 * survey_rollup_pending's before those of any table the read reads, the slice rows'. The set is
 * then what a read of it just before the query would have found: as read first, one round trip
 * less. test/integration/pending-beside.test.ts holds the engine to that order (a scalar subquery
 * on the left that sleeps, inserts meanwhile: the left misses them, the right sees them).
 */
export function checkedSql(q: NamedRead, orgId: string): CompiledQuery {
  if (q.columns) return checkedUnionSql(q, q.columns, orgId, q.standIns ?? {});
  const bag = new ParamBag('marks');
  const set =
    `SELECT groupArray(${MAX_PENDING_SLICES + 1})(toString(survey_id)) AS pending_surveys, groupArray(${MAX_PENDING_SLICES + 1})(toString(hour)) AS pending_hours ` +
    `FROM (${pendingSetSql(new TenantOrg(orgId, bag))})`;
  return compiled(
    `SELECT read.*, marks.pending_surveys, marks.pending_hours FROM (${set}) AS marks LEFT JOIN (SELECT 1 AS read_row, * FROM (${q.sql})) AS read ON true`,
    { ...q.params, ...bag.toParams() },
  );
}

/**
 * checkedSql for a read that names its columns: the org's mark rows, as stored (not summed), as the
 * first branch of a UNION ALL, then the read's rows:
 * `SELECT 0 AS read_row, <mark>, NULL AS <column>... FROM survey_rollup_pending WHERE org_id = ... LIMIT n
 *  UNION ALL SELECT 1, '', '', 0, <column>... FROM (<q>)`.
 * The same order as the join's: the first table expression of the query, its parts taken first
 * (test/integration/pending-beside.test.ts holds the engine to both forms). Without the join and
 * the set's two aggregations the engine plans ~3 ms less (bench/query/README.md, "2026-11-27: the
 * answer buckets in one grouping"); the marks are summed per slice by markedSet.
 */
function checkedUnionSql(q: CompiledQuery, columns: readonly string[], orgId: string, standIns: Readonly<Record<string, string>>): CompiledQuery {
  const bag = new ParamBag('marks');
  const marks =
    `SELECT 0 AS read_row, toString(survey_id) AS mark_survey, toString(hour) AS mark_hour, pending AS mark_pending${columns.map((c) => `, ${standIns[c] ?? 'NULL'} AS ${c}`).join('')} ` +
    `${new TenantOrg(orgId, bag).from('survey_rollup_pending')} LIMIT ${MAX_MARK_ROWS}`;
  const read = `SELECT 1, '', '', 0${columns.map((c) => `, ${c}`).join('')} FROM (${q.sql})`;
  return compiled(`(${marks}) UNION ALL (${read})`, { ...q.params, ...bag.toParams() });
}

/** The set of checkedUnionSql's mark rows (summed per slice; a slice whose marks sum to 0 is not pending); undefined when they reached MAX_MARK_ROWS. */
function markedSet(rows: readonly MarkRowColumns[]): Pending | undefined {
  const sums = new Map<string, { s: string; h: string; n: number }>();
  let count = 0;
  for (const r of rows) {
    if (Number(r.read_row) !== 0) continue;
    count++;
    const key = `${r.mark_survey}/${r.mark_hour}`;
    const entry = sums.get(key) ?? { s: r.mark_survey, h: r.mark_hour, n: 0 };
    entry.n += Number(r.mark_pending);
    sums.set(key, entry);
  }
  if (count >= MAX_MARK_ROWS) return undefined;
  return pendingOf([...sums.values()].filter((e) => e.n !== 0));
}

/**
 * Runs a read that serves slices of the rollup; every slice it serves was unmarked when the set
 * was read, and the set was read no later than the slice rows.
 *
 * Why the set is never read after the rows: a write acknowledged before the read holds its mark
 * until its recompute has replaced the slice row. Read first, the set names that slice (read raw)
 * or the recompute is already done (the row is fresh). Read after (a query of its own beside the
 * read, or a scalar subquery, which the engine runs after it took the parts of the read's tables),
 * the query could read the old row while the set, read a moment later, no longer names the slice.
 *
 * How, in one query most of the time: the read is compiled with a guess (the slices this process
 * saw pending lately), and checkedSql carries the set beside it. When the guess names every slice
 * of the set (coversPending), the rows stand; otherwise the read is compiled with that set and runs
 * again (its tables' parts are taken after the set's). When the last set named the whole org, or
 * with `marksFirst` (a cluster: ReadOptions), the set is read first, on its own, on `fresh` (never
 * from a cache).
 * `compile` returns null when the rollup cannot serve the request whatever is pending (the caller
 * then reads the raw table); returns the rows, or null.
 */
export async function runWithPending<R>(run: RunQuery, fresh: RunQuery, orgId: string, compile: (pending: Pending) => NamedRead | null, marksFirst = false): Promise<R[] | null> {
  const guess = marksFirst ? undefined : guessOf(orgId);
  if (guess) {
    const q = compile(guess);
    if (!q) return null;
    if (q.columns) {
      const rows = await run<R & MarkRowColumns>(checkedSql(q, orgId));
      const set = markedSet(rows);
      if (set) {
        remember(orgId, set);
        if (coversPending(guess, set)) {
          return rows.filter((r) => Number(r.read_row) === 1).map(({ read_row: _r, mark_survey: _s, mark_hour: _h, mark_pending: _p, ...row }) => row as R);
        }
        const again = compile(set);
        return again ? run<R>(again) : null;
      }
      // Too many mark rows to sum here: the set read first, on its own (below).
    } else {
      return checkedRead(run, orgId, compile, guess, q);
    }
  }
  const set = await readPending(fresh, orgId);
  remember(orgId, set);
  const q = compile(set);
  return q ? run<R>(q) : null;
}

/** runWithPending's read through checkedSql's join form. */
async function checkedRead<R>(run: RunQuery, orgId: string, compile: (pending: Pending) => CompiledQuery | null, guess: Pending, q: CompiledQuery): Promise<R[] | null> {
  const rows = await run<R & SetColumns>(checkedSql(q, orgId));
  const { pending_surveys: surveys, pending_hours: hours } = rows[0];
  const set = pendingOf(surveys.map((s, i) => ({ s, h: hours[i] })));
  remember(orgId, set);
  if (coversPending(guess, set)) return rows.filter((r) => Number(r.read_row) === 1).map(({ read_row: _r, pending_surveys: _s, pending_hours: _h, ...row }) => row as R);
  const again = compile(set);
  return again ? run<R>(again) : null;
}
