/** SEARCH /1.0/survey/<survey_ids>/response: the count, then the page (routes.ts wires it). */
import type { ClickHouseClient } from '@clickhouse/client';
import { QUERY_SETTINGS, type ResponseSelection } from './compile.ts';
import { compileSearchCount, compileSearchPage, pageWindowStart, pageWindowStarts, type ResponsePosition, type SearchCountRow } from './search-sql.ts';
import { windowStartsBefore } from '../query/page-windows.ts';
import { filtersServable, groupsFromTotals } from './rollups/groups.ts';
import { rollupCover, runWithPending, type ReadOptions, type RollupCover } from './rollups/read.ts';
import type { NamedRead } from './rollups/pending.ts';
import { rowsInSelectionSql } from './selection-rows.ts';
import { MICROS_PER_HOUR, parseInstantMicros } from '../query/histogram.ts';
import { ParamBag, compiled, type CompiledQuery, type RunQuery } from '../clickhouse/sql.ts';
import type { ResponseRecord } from './record.ts';
import { answersCompleteColumn, completeRows } from './answer-rollups.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { isClusterClient } from '../clickhouse/database.ts';
import { rebuildRecord, type StoredColumns } from './stored-doc.ts';

export interface SearchInput extends ResponseSelection {
  size: number;
  offset: number;
  /** The page starts after this position (a decoded cursor); `offset` then counts from it. */
  after?: ResponsePosition;
}

export interface SearchResult {
  took: number;
  hits: { total: { value: number }; responses: ResponseRecord[] };
  /** Present when matches follow the page: send it as `cursor` with the same search for the next page. */
  next_cursor?: string;
}

type PageRow = StoredColumns & { c: string; i: string };

/**
 * The count first (with the window counts), then the page from the smallest window that holds it
 * (see search-sql.ts), unless a window read beside the count already holds it (earlyPage,
 * pagesBesideCount); the page query is skipped when there is nothing to show (`size` 0, or `offset`
 * past the total). Not one query with `count() OVER ()`: every matching row, doc included, would
 * travel to the window before LIMIT; nor the whole-range page beside the count, which sorts every
 * match (bench/query/README.md, "Figures behind the schema and the code").
 *
 * When the filters only test what the rollups group by (none, or completion, language,
 * channel_id) and there is no cursor, the total comes from the rollups instead (searchFromRollup).
 */
export async function runSearch(run: RunQuery, input: SearchInput, options: ReadOptions = {}): Promise<{ total: number; docs: PageRow[]; more: boolean }> {
  // The window counts only serve to pick the page's window: none without a page.
  const windows = input.size > 0 ? pageWindowStarts(input.range?.end, Date.now(), input.after) : [];
  const early = earlyPage(run, input, windows);
  if (!input.after && options.rollups !== false && filtersServable(input)) {
    const found = await runWithPending<RollupCountRow>(run, options.fresh ?? run, input.orgId, (pending) => {
      const window = rollupCover(input.range, pending, 'month');
      return window ? compileRollupCount(input, window) : null;
    }, options.marksFirst);
    const complete = found && completeRows(found);
    if (complete) return searchFromRollup(run, input, complete[0], early);
  }
  let counting = true;
  const tries = pagesBesideCount(run, input, windows, early, () => counting);
  const [found] = await run<SearchCountRow>(compileSearchCount(input, windows, input.after)).finally(() => {
    counting = false;
  });
  const total = Number(found?.total ?? 0);
  // The matches the page is taken from: all of them, or those after the cursor.
  const available = input.after ? Number(found?.after_total ?? 0) : total;
  if (input.size === 0 || input.offset >= available) return { total, docs: [], more: false };
  const page = await holding(early, input, available);
  if (page) return { total, docs: page, more: input.offset + page.length < available };
  const counts = { ...found, total: available } as SearchCountRow;
  const start = pageWindowStart(counts, windows, input.offset, input.size);
  const tried = start === undefined ? undefined : await triedHolding(tries, windows.indexOf(start));
  if (tried) return { total, docs: tried, more: input.offset + tried.length < available };
  const noneInWindows = start === undefined && Number(counts[`w${windows.length - 1}`] ?? 0) === 0;
  const newest = noneInWindows && counts.newest !== undefined ? (parseInstantMicros(counts.newest) ?? undefined) : undefined;
  const docs = newest !== undefined ? await pageFromWindows(run, input, available, windowStartsBefore(newest)) : await run<PageRow>(compileSearchPage(input, input.size, input.offset, start, input.after));
  return { total, docs, more: input.offset + docs.length < available };
}

/**
 * The page after the exact total from the rollups (compileRollupCount: the slices inside the range
 * plus the raw rows they do not answer, the partial hours at the ends and pending slices), whose
 * cost follows the number of slices, not of responses. The page then reads the windows before the
 * range end (or now, or the hour after the newest match, whichever is first), smallest first,
 * until one holds it: the newest page of a live org reads its last hour or day, and an org whose
 * last response is days old does not try empty windows first.
 */
async function searchFromRollup(run: RunQuery, input: SearchInput, found: RollupCountRow | undefined, early: Promise<PageRow[] | undefined> | undefined): Promise<{ total: number; docs: PageRow[]; more: boolean }> {
  const total = Number(found?.total ?? 0);
  if (input.size === 0 || input.offset >= total) return { total, docs: [], more: false };
  const page = await holding(early, input, total);
  if (page) return { total, docs: page, more: input.offset + page.length < total };
  const now = BigInt(Date.now()) * 1000n;
  const end = input.range?.end !== undefined ? parseInstantMicros(input.range.end) ?? now : now;
  const newest = found?.newest ? parseInstantMicros(found.newest) : null;
  let anchor = end < now ? end : now;
  if (newest !== null && newest + MICROS_PER_HOUR < anchor) anchor = newest + MICROS_PER_HOUR;
  const docs = await pageFromWindows(run, input, total, windowStartsBefore(anchor));
  return { total, docs, more: input.offset + docs.length < total };
}

type RollupCountRow = { total: number | string; newest: string | null };

/**
 * `total`: the responses in selection, from the rollup rows of the window and the raw rows beside
 * them; `newest`: the start of the newest slice holding a match, or the newest raw match's
 * created_at (whichever is later; null without a match): the newest match is before it + 1 hour.
 */
export function compileRollupCount(selection: ResponseSelection, window: RollupCover): NamedRead {
  const bag = new ParamBag();
  // The raw rows are few here (the partial hours at the ends, pending hours): grouped by their
  // created_at, they give the newest match as the slices do.
  const rows = rowsInSelectionSql(selection, window, bag, { keys: ['created_at'] });
  const check = answersCompleteColumn(selection, window, bag, groupsFromTotals(selection, []));
  // Its columns named: the pending set rides beside it in a UNION ALL (rollups/pending.ts checkedSql).
  return Object.freeze({
    ...compiled(`SELECT sum(group_rows) AS total, toString(maxIfOrNull(created_at, group_rows > 0)) AS newest${check} FROM (${rows})`, bag),
    columns: check ? ['total', 'newest', 'answers_complete'] : ['total', 'newest'],
  });
}

/**
 * The page from the smallest window (1 hour before the range end, now or the cursor), read while
 * the count runs: most pages of a live organization are in it, and then the count decides only
 * whether it holds the page (`holding`), not which window to read. A failed early read is
 * dropped (the page is read again after the count).
 */
function earlyPage(run: RunQuery, input: SearchInput, windows: readonly string[]): Promise<PageRow[] | undefined> | undefined {
  if (input.size === 0 || windows.length === 0) return undefined;
  return run<PageRow>(compileSearchPage(input, input.size, input.offset, windows[0], input.after)).catch(() => undefined);
}

/** The page windows read beside a raw count: the hour (the early page), then the day. */
const WINDOWS_BESIDE_COUNT = 2;

/**
 * The page from the next windows, read while a count over the raw rows runs: when the early page
 * (the smallest window) came back short and the count is still running, the next window's page
 * is read beside it, so that the page the count picks is often already read when it returns
 * rather than a round trip after it. Entry i is the page of window i (undefined: not read, or it
 * failed). A window is only started while the count runs, and no larger than WINDOWS_BESIDE_COUNT:
 * a short page there means few matches, which the count's window counts place better than a
 * larger guess.
 */
function pagesBesideCount(run: RunQuery, input: SearchInput, windows: readonly string[], early: Promise<PageRow[] | undefined> | undefined, counting: () => boolean): (Promise<PageRow[] | undefined> | undefined)[] {
  const tries = [early];
  void (async () => {
    for (let i = 1; i < Math.min(windows.length, WINDOWS_BESIDE_COUNT); i++) {
      const rows = await tries[i - 1];
      if (!rows || rows.length === input.size || !counting()) return;
      tries[i] = run<PageRow>(compileSearchPage(input, input.size, input.offset, windows[i], input.after)).catch(() => undefined);
    }
  })();
  return tries;
}

/**
 * The page of a window read beside the count that holds it: window `smallest` (the smallest
 * holding the page, by the count) or a larger one, all of whose pages are the same.
 */
async function triedHolding(tries: readonly (Promise<PageRow[] | undefined> | undefined)[], smallest: number): Promise<PageRow[] | undefined> {
  for (let i = Math.max(smallest, 0); smallest >= 0 && i < tries.length; i++) {
    const rows = await tries[i];
    if (rows) return rows;
  }
  return undefined;
}

/**
 * The early page when its window held the page: it came back full (the window holds the newest
 * `offset + size` matches, all newer than any match before it), or it reaches the last of the
 * `available` matches.
 */
async function holding(early: Promise<PageRow[] | undefined> | undefined, input: SearchInput, available: number): Promise<PageRow[] | undefined> {
  const rows = await early;
  return rows && (rows.length === input.size || input.offset + rows.length === available) ? rows : undefined;
}

/**
 * The page from windows starting at these instants, smallest first, until one holds it. A window
 * holds it when the page came back full (it has `offset + size` matches, all newer than any match
 * before it) or when it reaches the last match (`offset` + rows = total); otherwise the next,
 * larger window runs, and the whole selection last. Each try reads only its window, so the tries
 * together cost about the last one.
 */
async function pageFromWindows(run: RunQuery, input: SearchInput, total: number, starts: readonly string[]): Promise<PageRow[]> {
  for (const start of starts) {
    const docs = await run<PageRow>(compileSearchPage(input, input.size, input.offset, start, input.after));
    if (docs.length === input.size || input.offset + docs.length === total) return docs;
  }
  return run<PageRow>(compileSearchPage(input, input.size, input.offset, undefined, input.after));
}

/** The search request: its selection, `size`, `offset`, and `cursor` (from a previous answer). */
export async function searchResponses(client: ClickHouseClient, selection: ResponseSelection, page: { size: number; offset: number; cursor?: string }): Promise<SearchResult> {
  const started = performance.now();
  const run: RunQuery = async (q) =>
    (await client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: QUERY_SETTINGS })).json();
  const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor, selection);
  const { total, docs, more } = await runSearch(run, { ...selection, size: page.size, offset: page.offset, after }, { marksFirst: isClusterClient(client) });
  const last = docs[docs.length - 1];
  return {
    took: Math.round(performance.now() - started),
    hits: { total: { value: total }, responses: docs.map(rebuildRecord) },
    ...(more && last ? { next_cursor: encodeCursor({ createdAt: last.c, id: last.i }, selection) } : {}),
  };
}
