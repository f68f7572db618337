/**
 * The rows in a read's selection, wherever they are stored: the one source that the summary, the
 * aggregation and the search count start from.
 *
 * Decide, then print. The decision is a RollupCover (rollups/read.ts: rollupCover, taken with
 * the pending marks of rollups/pending.ts), or none: the raw table answers all of the selection. This
 * file only prints what was decided:
 *   - rawRowsSql: `FROM survey_responses FINAL [PREWHERE <what the rollup does not answer>] WHERE
 *     <selection>`, each raw row standing for one response;
 *   - rowsInSelectionSql: a relation of groups of responses with their count `group_rows`, the raw
 *     rows grouped by the columns asked for beside the slice groups of the rollup, with the same
 *     columns and types. Summing group_rows over any grouping of its rows counts the responses.
 *
 * The remainder (partial hours at the range's ends, pending hours, the hours holding a bucket
 * edge) only tests created_at and survey_id, columns of the sorting key that every version of a
 * response shares: filtering on them before FINAL picks its latest version (PREWHERE) drops or
 * keeps all versions of a response together, so it is exact, and the engine reads the other
 * columns only for the rows it keeps.
 */
import { fromSelection, type ResponseSelection } from './compile.ts';
import type { ParamBag } from '../clickhouse/sql.ts';
import { rollupGroupsSql, type GroupColumn } from './rollups/groups.ts';
import { rawRemainderSql, type RollupCover } from './rollups/read.ts';

/** Dimensions of a response that the raw rows and the slice groups both carry. */
export type ScopeKey = 'survey_id' | 'created_at' | Exclude<GroupColumn, `x_${string}`>;

export interface RowsRequest {
  /** The columns the groups keep apart (a slice's created_at is its start). */
  keys: readonly ScopeKey[];
  /** Also the score counts group_nps, group_csat, group_ces (Map(UInt8, UInt64) per group). */
  scores?: boolean;
}

/**
 * The raw rows of the selection that the window does not answer (all of them without a window), as
 * `FROM ... WHERE ...`; undefined when the window answers the whole selection. Callers append
 * `AND ...`, GROUP BY or ORDER BY.
 */
export function rawRowsSql(selection: ResponseSelection, bag: ParamBag, window?: RollupCover): string | undefined {
  if (!window) return fromSelection(selection, bag);
  let answered = false;
  const source = fromSelection(selection, bag, (b) => {
    const remainder = rawRemainderSql(window, b);
    answered = remainder === undefined;
    return remainder;
  });
  return answered ? undefined : source;
}

/** Each element of an array column counted once per occurrence: value -> count, summed over the rows. */
export const countElementsSql = (column: string) => `sumMap(mapFromArrays(${column}, arrayMap(x -> toUInt64(1), ${column})))`;

/** The score counts: the column of each in the raw table and in the slice groups (rollups/read.ts). */
const SCORES = [
  { name: 'group_nps', raw: 'nps_scores', slice: 'x_nps' },
  { name: 'group_csat', raw: 'csat_scores', slice: 'x_csat' },
  { name: 'group_ces', raw: 'ces_scores', slice: 'x_ces' },
] as const;

/**
 * The raw rows that the window does not answer (all of them without one), grouped by the keys:
 * `SELECT <keys>, group_rows[, group_nps, group_csat, group_ces] FROM survey_responses ...`; undefined when the
 * window answers the whole selection.
 */
export function rawGroupsSql(selection: ResponseSelection, window: RollupCover | undefined, bag: ParamBag, request: RowsRequest): string | undefined {
  const raw = rawRowsSql(selection, bag, window);
  if (raw === undefined) return undefined;
  const keys = [...new Set(request.keys)];
  const measures = ['count() AS group_rows', ...(request.scores ? SCORES.map((c) => `${countElementsSql(c.raw)} AS ${c.name}`) : [])];
  return `SELECT ${[...keys, ...measures].join(', ')} ${raw}${keys.length ? ` GROUP BY ${keys.join(', ')}` : ''}`;
}

/**
 * `SELECT <keys>, group_rows[, group_nps, group_csat, group_ces] FROM (raw groups UNION ALL slice groups)` for the
 * selection, from the window when there is one.
 */
export function rowsInSelectionSql(selection: ResponseSelection, window: RollupCover | undefined, bag: ParamBag, request: RowsRequest): string {
  const keys = [...new Set(request.keys)];
  const scores = request.scores ? SCORES : [];
  const parts: string[] = [];
  const raw = rawGroupsSql(selection, window, bag, request);
  if (raw !== undefined) parts.push(raw);
  if (window) {
    const dims = keys.filter((k): k is Exclude<ScopeKey, 'survey_id' | 'created_at'> => k !== 'survey_id' && k !== 'created_at');
    const slices = rollupGroupsSql(selection, window, bag, [...dims, ...scores.map((c) => c.slice)]);
    parts.push(`SELECT ${[...keys, 'x_rows AS group_rows', ...scores.map((c) => `${c.slice} AS ${c.name}`)].join(', ')} FROM (${slices})`);
  }
  return parts.length === 1 ? parts[0] : parts.map((p) => `(${p})`).join(' UNION ALL ');
}
