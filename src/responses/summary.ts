/**
 * SEARCH /1.0/survey/<survey_ids>/response/summary: NPS / CSAT / CES, completion, end reasons,
 * languages and supports of the responses in selection, in ONE query (one pass over narrow columns,
 * see compileSummary), run through the polling cache (src/query/request-cache.ts).
 *
 * Decisions (where the spec is silent):
 * - Scores come from answer entries (not responses): a response with two NPS answers counts twice.
 *   Only whole numbers on the scale count (NPS 0..10, CSAT 1..5, CES 1..7); anything else (7.5, 11,
 *   no number) is ignored.
 * - `nps_details` has the keys "0".."10" (decisions.md: NPS is 0..10, so "0" is added to the
 *   spec's 1..10); `csat_details` "1".."5"; `ces_details` "1".."7"; zero counts included.
 * - Averages and `nps_score` are rounded to 2 decimals, half away from zero, computed exactly from
 *   the integer counts. With no scored answer an average is null, and so is `nps_score` (0 would
 *   claim a neutral score that nobody gave).
 * - `end_reasons` leaves out "" (active responses have no end reason); `languages` leaves out "".
 *   `supports` counts responses per value of their hidden field `support` (a response listing two
 *   values counts once in each). Object keys are sorted.
 * - The body is the selection part of the search body; `size` and `offset` are ignored (a dashboard
 *   may send the search body as is).
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { ParamBag, compiled, type RunQuery } from '../clickhouse/sql.ts';
import { QUERY_SETTINGS, type ResponseSelection } from './compile.ts';
import { rawGroupsSql, rowsInSelectionSql } from './selection-rows.ts';
import { cachedRequest } from '../query/request-cache.ts';
import { isClusterClient } from '../clickhouse/database.ts';
import { COMPLETION_VALUES } from './filters.ts';
import { answerTotalsFilter, answerTotalsSummarySql, answersCompleteColumn, completeRows } from './answer-rollups.ts';
import { filtersServable, totalsServable } from './rollups/groups.ts';
import { rollupRowsSql, rollupCover, runWithPending, type ReadOptions, type RollupCover } from './rollups/read.ts';
import type { NamedRead } from './rollups/pending.ts';

// --- the summary -----------------------------------------------------------------------------------

/** The scales; schema/004 computes nps_scores, csat_scores and ces_scores with these bounds and cta_types. */
export const SCALES = {
  nps: { min: 0, max: 10 },
  csat: { min: 1, max: 5 },
  ces: { min: 1, max: 7 },
} as const;
type ScaleName = keyof typeof SCALES;

export interface Summary {
  ces_avg: number | null;
  ces_details: Record<string, number>;
  csat_avg: number | null;
  csat_details: Record<string, number>;
  nps_details: Record<string, number>;
  nps_groups: { detractor: number; neutral: number; promotor: number; total: number };
  nps_score: number | null;
  completion: Record<string, number>;
  end_reasons: Record<string, number>;
  languages: Record<string, number>;
  supports: Record<string, number>;
}

/** The engine row. Aliases end in `_counts` so that none shadows a column in WHERE (ClickHouse resolves aliases there). */
export interface SummaryRow {
  nps_counts: Record<string, number | string>;
  csat_counts: Record<string, number | string>;
  ces_counts: Record<string, number | string>;
  completion_counts: Record<string, number | string>;
  end_reason_counts: Record<string, number | string>;
  language_counts: Record<string, number | string>;
  support_counts: Record<string, number | string>;
}

/**
 * The rows in selection (selection-rows.ts) grouped by (completion, end_reason, language, hf_support), all
 * small LowCardinality/Enum keys (a few hundred groups), with their response and score counts,
 * then folded into the seven maps. The scores and the `support` values come from columns the
 * engine computes at insert (schema/004: nps_scores, csat_scores, ces_scores hold the whole-number
 * scores of SCALES; hf_support the distinct values of the hidden field `support`). Without a
 * filter, the slices' totals (schema/050) are the maps already and stand for their groups.
 * One grouped query over the narrow columns, not a flat pass over the wide arrays (the `support`
 * values alone would read every user agent), nor several queries (GROUPING SETS, ARRAY JOIN), each
 * of which would pay the FINAL read again (bench/query/README.md, "Figures behind the schema and
 * the code").
 */
export function compileSummary(selection: ResponseSelection, rollup?: RollupCover): NamedRead {
  const bag = new ParamBag();
  const request = { keys: ['completion', 'end_reason', 'language', 'hf_support'] as const, scores: true };
  // Each part folds into the seven maps, as b_* columns of one row with the same types; the
  // parts' rows are then added up. (Inner aliases are neither column names nor lambda arguments
  // of the filters: ClickHouse resolves aliases in WHERE.)
  const fold = (groups: string, extra = '') =>
    'SELECT sumMap(group_nps) AS b_nps, sumMap(group_csat) AS b_csat, sumMap(group_ces) AS b_ces, ' +
    'sumMap(map(toString(completion), group_rows)) AS b_completion, sumMap(map(toString(end_reason), group_rows)) AS b_end_reason, ' +
    'sumMap(map(toString(language), group_rows)) AS b_language, ' +
    `sumMap(mapFromArrays(CAST(hf_support, 'Array(String)'), arrayMap(x -> group_rows, hf_support))) AS b_support${extra} FROM (${groups})`;
  const parts: string[] = [];
  // The slice totals stand for their groups (schema/050; schema/111 for one answer `eq`): they are
  // the summary's maps already. The answer totals' part also counts the slices whose answer totals
  // are missing (b_incomplete, the other parts 0): one query reads and checks them.
  const answer = rollup !== undefined && answerTotalsFilter(selection) !== undefined;
  const incomplete = answer ? ', toUInt64(0) AS b_incomplete' : '';
  if (rollup && totalsServable(selection)) {
    const raw = rawGroupsSql(selection, rollup, bag, request);
    if (raw !== undefined) parts.push(fold(raw, incomplete));
    const asText = (column: string) => `sumMap(CAST(${column}, 'Map(String, UInt64)'))`;
    const totals =
      `sumMap(t_nps) AS b_nps, sumMap(t_csat) AS b_csat, sumMap(t_ces) AS b_ces, ${asText('t_completion')} AS b_completion, ` +
      `${asText('t_end_reason')} AS b_end_reason, ${asText('t_language')} AS b_language, ${asText('t_support')} AS b_support`;
    parts.push(answer ? answerTotalsSummarySql(selection, rollup, bag, totals) : `SELECT ${totals} ${rollupRowsSql(selection, rollup, bag)}`);
  } else {
    parts.push(fold(rowsInSelectionSql(selection, rollup, bag, request)));
  }
  // "" is no end reason (an active response) and no language: counted in no bucket.
  const nonEmptyKeys = (column: string) => `mapFilter((k, v) -> notEmpty(k), ${column})`;
  const columns = [
    'sumMap(b_nps) AS nps_counts',
    'sumMap(b_csat) AS csat_counts',
    'sumMap(b_ces) AS ces_counts',
    'sumMap(b_completion) AS completion_counts',
    `${nonEmptyKeys('sumMap(b_end_reason)')} AS end_reason_counts`,
    `${nonEmptyKeys('sumMap(b_language)')} AS language_counts`,
    'sumMap(b_support) AS support_counts',
  ];
  const check = answer ? ', sum(b_incomplete) = 0 AS answers_complete' : answersCompleteColumn(selection, rollup, bag, false);
  // Its columns named: the pending set rides beside it in a UNION ALL (rollups/pending.ts
  // checkedSql), `map()` on the mark rows for the maps, which cannot be Nullable.
  return Object.freeze({
    ...compiled(`SELECT ${columns.join(', ')}${check} FROM (${parts.join(' UNION ALL ')})`, bag),
    columns: check ? [...SUMMARY_COLUMNS, 'answers_complete'] : SUMMARY_COLUMNS,
    standIns: SUMMARY_STAND_INS,
  });
}

/** The summary row's maps (SummaryRow), in the order compileSummary selects them. */
const SUMMARY_COLUMNS = ['nps_counts', 'csat_counts', 'ces_counts', 'completion_counts', 'end_reason_counts', 'language_counts', 'support_counts'] as const;
const SUMMARY_STAND_INS: Readonly<Record<string, string>> = Object.freeze(Object.fromEntries(SUMMARY_COLUMNS.map((c) => [c, 'map()'])));

/** The engine row -> the summary object. Pure. */
export function shapeSummary(row: SummaryRow | undefined): Summary {
  const details = (scale: ScaleName) => {
    const found = row?.[`${scale}_counts`] ?? {};
    const out: Record<string, number> = {};
    for (let s = SCALES[scale].min; s <= SCALES[scale].max; s++) out[String(s)] = Number(found[String(s)] ?? 0);
    return out;
  };
  const nps = details('nps');
  const csat = details('csat');
  const ces = details('ces');
  const sumRange = (d: Record<string, number>, from: number, to: number) => {
    let n = 0;
    for (let s = from; s <= to; s++) n += d[String(s)];
    return n;
  };
  const detractor = sumRange(nps, 0, 6);
  const neutral = sumRange(nps, 7, 8);
  const promotor = sumRange(nps, 9, 10);
  const total = detractor + neutral + promotor;
  const completion: Record<string, number> = {};
  for (const c of COMPLETION_VALUES) completion[c] = Number(row?.completion_counts?.[c] ?? 0);
  return {
    ces_avg: average(ces),
    ces_details: ces,
    csat_avg: average(csat),
    csat_details: csat,
    nps_details: nps,
    nps_groups: { detractor, neutral, promotor, total },
    nps_score: total === 0 ? null : roundRatio((promotor - detractor) * 100, total),
    completion,
    end_reasons: counts(row?.end_reason_counts),
    languages: counts(row?.language_counts),
    supports: counts(row?.support_counts),
  };
}

function average(details: Record<string, number>): number | null {
  let sum = 0;
  let n = 0;
  for (const [score, count] of Object.entries(details)) {
    sum += Number(score) * count;
    n += count;
  }
  return n === 0 ? null : roundRatio(sum, n);
}

/**
 * num / den rounded to 2 decimals, half away from zero, in integers (no float drift: 2/3 -> 0.67,
 * -1/8 -> -0.13). num and den are integers, den > 0.
 */
export function roundRatio(num: number, den: number): number {
  const scaled = Math.floor((2 * Math.abs(num) * 100 + den) / (2 * den));
  const value = (Math.sign(num) * scaled) / 100;
  return value === 0 ? 0 : value; // never -0
}

function counts(found: Record<string, number | string> | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of Object.keys(found ?? {}).sort()) out[key] = Number(found![key]);
  return out;
}

/** SEARCH /1.0/survey/<survey_ids>/response/summary, for a parsed selection. */
export async function summarize(client: ClickHouseClient, selection: ResponseSelection, options: ReadOptions = {}): Promise<{ summary: Summary; watermark: number }> {
  // The request is cached as a whole (src/query/request-cache.ts); within it, the pending marks
  // are read without any cache and the main query may use the engine's 3 s query cache (its SQL
  // names the pending slices, so a cached result was computed with the same ones).
  const { value: rows, at } = await cachedRequest(client, 'summary', [selection, options], QUERY_SETTINGS, ({ run, fresh }) => runSummary(run, selection, { ...options, fresh, marksFirst: isClusterClient(client) }));
  return { summary: shapeSummary(rows[0]), watermark: at };
}

/** The summary row: from the rollup where it answers (rollups/read.ts), the raw table for the rest. */
export async function runSummary(run: RunQuery, selection: ResponseSelection, options: ReadOptions = {}): Promise<SummaryRow[]> {
  if (options.rollups === false || !filtersServable(selection)) return run<SummaryRow>(compileSummary(selection));
  // null never comes back: without a window, compileSummary reads the raw table alone. An answer
  // filter over slices written before their answer groups had scores: the raw table (answer-rollups.ts).
  const rows = (await runWithPending<SummaryRow>(run, options.fresh ?? run, selection.orgId, (pending) => compileSummary(selection, rollupCover(selection.range, pending, 'month') ?? undefined), options.marksFirst))!;
  return completeRows(rows) ?? run<SummaryRow>(compileSummary(selection));
}
