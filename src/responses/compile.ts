/**
 * Pure compiler: filter nodes + selection -> parameterised ClickHouse SQL over `survey_responses`.
 *
 * Values only ever travel as query parameters (ParamBag); the only text spliced into SQL is
 * column names, operators and type literals from this file. Every read is
 * `FROM survey_responses FINAL WHERE <selection>`, and the selection starts with the token's org.
 */
import type { ClickHouseSettings } from '@clickhouse/client';
import { DT64, ParamBag, compiled, likeContaining, type CompiledQuery } from '../clickhouse/sql.ts';
import { TenantOrg } from '../clickhouse/tenant.ts';
import { scalarAsNumber, textBeforeAfterSql } from '../query/filter-args.ts';
import type { FilterNode, SelectionBody, Scalar } from './filters.ts';
import { pageWindowAnchor, smallestWindowHolding, windowCountColumns, windowStartsBefore } from '../query/page-windows.ts';
import { compileSelectionWhere } from '../query/selection.ts';
import { NO_JIT_SETTINGS, READ_SETTINGS } from '../query/settings.ts';
import { parseInstantMicros } from '../time/iso.ts';
import { answerFilterSql } from './answer-filter.ts';
import { STORED_COLUMNS_SQL } from './stored-doc.ts';

/**
 * Settings of every survey-response query: the query language's read limits, with the engine's JIT
 * compilation of expressions off (both src/query/settings.ts).
 */
export const QUERY_SETTINGS: ClickHouseSettings = Object.freeze({ ...READ_SETTINGS, ...NO_JIT_SETTINGS });

export interface ResponseSelection {
  orgId: string;
  surveyIds: string[] | '*';
  filtersBool: 'AND' | 'OR';
  filters: readonly FilterNode[];
  range?: { start?: string; end?: string };
}

/** A response's place in the search order (created_at, id, both descending): what a cursor carries (cursor.ts). */
export interface ResponsePosition {
  /** DateTime64(6) text, as the engine prints it. */
  createdAt: string;
  id: string;
}

/** The selection of a read: the token's organization, the path's survey list, the body's filters and range. */
export function selectionOf(orgId: string, surveyIds: ResponseSelection['surveyIds'], body: SelectionBody): ResponseSelection {
  return { orgId, surveyIds, filtersBool: body.filters_bool, filters: body.filters, range: body.range };
}

/**
 * The WHERE expression (without the keyword): org first, then surveys, the created_at window,
 * then the filters joined by filtersBool in parentheses. Range bounds are inclusive DateTime64
 * texts ('YYYY-MM-DD HH:MM:SS.ffffff', as rangeSchema produces them).
 */
export function compileSelection(selection: ResponseSelection, bag: ParamBag): string {
  const org = new TenantOrg(selection.orgId, bag);
  const extra = selection.surveyIds !== '*' ? [`survey_id IN ${bag.add(selection.surveyIds, 'Array(UUID)')}`] : [];
  return compileSelectionWhere(selection, bag, { org, table: 'survey_responses', time: 'created_at', extra, filter: (f) => compileFilter(f, bag) });
}

/**
 * The one source every survey read starts from: `FROM survey_responses FINAL WHERE <selection>`, whose
 * selection begins with the token's organization. The tenant guard and the version dedup (FINAL) are
 * part of the source, so no query can forget either (as PostHog's HogQL prints team_id into every
 * table it reads). Callers append `AND ...` conditions or GROUP BY / ORDER BY after it.
 * `prewhere` may only test columns of the sorting key (created_at, survey_id): every version of a
 * response shares them, so filtering before FINAL keeps or drops its versions together.
 */
export function fromSelection(selection: ResponseSelection, bag: ParamBag, prewhere?: (bag: ParamBag) => string | undefined): string {
  const where = compileSelection(selection, bag);
  const before = prewhere?.(bag);
  return `FROM survey_responses FINAL${before ? ` PREWHERE ${before}` : ''} WHERE ${where}`;
}

export function compileFilter(node: FilterNode, bag: ParamBag): string {
  // null / not_null have a natural negative form; every other negation wraps its positive twin.
  if (node.kind === 'language' && node.op === 'null') return node.negate ? `language != ''` : `language = ''`;
  if (node.kind === 'hidden_field' && node.op === 'null') {
    const has = `has(hf_keys, ${bag.add(node.key, 'String')})`;
    return node.negate ? has : `NOT ${has}`;
  }
  const positive = positiveExpr(node, bag);
  return node.negate ? `NOT (${positive})` : positive;
}

/**
 * A UUID's canonical text (toString(UUID)): what schema/266 leaves out of alias_text, the aliases
 * `a` with toString(toUUIDOrZero(a)) = a. A value this does not match is no such text.
 */
const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const isUuidText = (s: string): boolean => UUID_TEXT.test(s);

/**
 * Whether no UUID text contains `needle` for positionCaseInsensitiveUTF8: it holds an ASCII
 * character other than 0-9, a-f, A-F and `-`. The function matches an ASCII needle character
 * only where the haystack's character lower-cases (toLower of the code point) to the same one,
 * and a UUID text has only 0-9, a-f and `-`, each its own lower case.
 */
export function uuidTextCannotContain(needle: string): boolean {
  for (const c of needle) if (c < '\x80' && !/[0-9a-fA-F-]/.test(c)) return true;
  return false;
}

/** ASCII without NUL. */
const isPlainAscii = (s: string): boolean => /^[\x01-\x7f]*$/.test(s);

/** The separator of alias_text (schema/266) and its stand-in for a NUL inside an alias: constants, not values. */
const NUL_SQL = "'\\0'";
const NUL_STAND_IN_SQL = "'\\xFF'";

/** multiSearchAny takes at most 255 needles. */
const MAX_SEARCH_NEEDLES = 255;

/**
 * The respondent alias filters. schema/266 keeps the aliases that are not a UUID text (a
 * respondent id given as an alias, half the bytes in the bench's data) in alias_text, one string
 * `\0a\0b\0` per response (a NUL inside an alias stored as 0xFF, a byte UTF-8 text never holds).
 * Values a UUID text could match, and values with a NUL, read respondent_aliases as before.
 * - `contains` of an ASCII value: `position(lower(alias_text), lower(value))`. A match cannot
 *   span the NUL between two aliases; and for an ASCII value positionCaseInsensitiveUTF8 matches a
 *   haystack character only where its ASCII lower case equals the value's (UTF-8 sequences of other
 *   characters hold no ASCII byte), which `lower` (ASCII only) then `position` does: the answers of
 *   the per-element test. The exceptions are the characters whose case partner is ASCII (the
 *   Kelvin sign, İ, ı, ſ): for them the engine's function depends on the strings stored beside the
 *   tested one (bench/query/README.md), here they never match an ASCII letter.
 * - `contains` of another value: alias_text split back into its aliases (NULs restored), each
 *   tested with positionCaseInsensitiveUTF8, as before (the empty strings the split adds at the
 *   ends contain no non-empty value).
 * - eq / in: an alias equals the value exactly when `\0value\0` occurs in alias_text (multiSearchAny
 *   for in): no alias holds a NUL there and the value holds no 0xFF.
 */
function aliasExpr(node: Extract<FilterNode, { kind: 'respondent_alias' }>, bag: ParamBag): string {
  if (node.op === 'contains') {
    const value = node.values[0];
    const utf8 = (column: string) => `arrayExists(a -> positionCaseInsensitiveUTF8(a, ${bag.add(value, 'String')}) > 0, ${column})`;
    if (!uuidTextCannotContain(value) || value.includes('\0')) return utf8('respondent_aliases');
    if (isPlainAscii(value)) return asciiContainsSql(value, bag);
    return utf8(`arrayMap(a -> replaceAll(a, ${NUL_STAND_IN_SQL}, ${NUL_SQL}), splitByChar(${NUL_SQL}, alias_text))`);
  }
  const values = node.op === 'eq' ? node.values.slice(0, 1) : node.values;
  if (values.some((v) => isUuidText(v) || v.includes('\0'))) {
    return node.op === 'eq' ? `has(respondent_aliases, ${bag.add(values[0], 'String')})` : `hasAny(respondent_aliases, ${bag.add(values, 'Array(String)')})`;
  }
  const needles = [...new Set(values)].map((v) => `\0${v}\0`);
  if (needles.length === 1) return `position(alias_text, ${bag.add(needles[0], 'String')}) > 0`;
  const tests: string[] = [];
  for (let i = 0; i < needles.length; i += MAX_SEARCH_NEEDLES) tests.push(`multiSearchAny(alias_text, ${bag.add(needles.slice(i, i + MAX_SEARCH_NEEDLES), 'Array(String)')})`);
  return tests.length === 1 ? tests[0] : `(${tests.join(' OR ')})`;
}

/** A run of bytes a prefilter must span at least (shorter ones are in most texts). */
const MIN_PREFILTER_BYTES = 2;

/**
 * `contains` of an ASCII value without NUL on alias_text: `position(lower(alias_text), lower(v))`
 * (aliasExpr). `lower` changes only the ASCII letters A-Z, so wherever lower(v) occurs in
 * lower(alias_text), v's other bytes occur at the same place in alias_text itself:
 * - a value without letters is searched in alias_text as it is, without lowering it;
 * - otherwise, when the value holds a run of at least MIN_PREFILTER_BYTES other bytes (the digits
 *   and `-` of "user-42"), `position(alias_text, run) > 0 AND` comes first: a plain search of the
 *   stored text, and the engine's AND lowers and searches only the texts it keeps (a fifth of the
 *   alias test's CPU at 10M, bench/query/README.md, "whole weeks"). The AND is implied by the test
 *   after it, so the answers are the same.
 */
function asciiContainsSql(value: string, bag: ParamBag): string {
  const runs = value.split(/[A-Za-z]+/);
  if (runs.length === 1) return `position(alias_text, ${bag.add(value, 'String')}) > 0`;
  const lowered = `position(lower(alias_text), ${bag.add(value.toLowerCase(), 'String')}) > 0`;
  const longest = runs.reduce((a, b) => (b.length > a.length ? b : a), '');
  return longest.length >= MIN_PREFILTER_BYTES ? `(position(alias_text, ${bag.add(longest, 'String')}) > 0 AND ${lowered})` : lowered;
}

/** The respondent's segments as UUID texts: the expression the segment_items index (schema/210) is built on. */
const SEGMENT_TEXTS = 'arrayMap(g -> toString(g), group_ids)';

function positiveExpr(node: FilterNode, bag: ParamBag): string {
  switch (node.kind) {
    case 'respondent_id':
    case 'channel_id':
      return node.op === 'eq'
        ? `${node.kind} = ${bag.add(node.values[0], 'UUID')}`
        : `${node.kind} IN ${bag.add(node.values, 'Array(UUID)')}`;
    case 'respondent_segments':
      // The expression of the segment_items text index (schema/210), so that the engine answers
      // the test from the index's postings; toString of a UUID parameter is its canonical text,
      // the form the index holds.
      return node.op === 'eq'
        ? `has(${SEGMENT_TEXTS}, toString(${bag.add(node.values[0], 'UUID')}))`
        : `hasAny(${SEGMENT_TEXTS}, arrayMap(g -> toString(g), ${bag.add(node.values, 'Array(UUID)')}))`;
    case 'respondent_alias':
      return aliasExpr(node, bag);
    case 'raw':
      // answer_text is stored lower-cased with the same JS toLowerCase, so a substring search of
      // the lower-cased keyword is case-insensitive on both sides alike. Written as LIKE (the
      // keyword's LIKE metacharacters escaped) so the text index (schema/170) can narrow the rows.
      return `answer_text LIKE ${bag.add(likeContaining(node.value.toLowerCase()), 'String')}`;
    case 'language':
      switch (node.op) {
        case 'null': break; // compileFilter
        case 'eq': return `language = ${bag.add(node.values[0], 'String')}`;
        case 'in': return `language IN ${bag.add(node.values, 'Array(String)')}`;
      }
      break;
    case 'completion':
      return node.op === 'eq'
        ? `completion = ${bag.add(node.values[0], 'String')}`
        : `completion IN ${bag.add(node.values, 'Array(String)')}`;
    case 'hidden_field':
      return hiddenFieldExpr(node, bag);
    case 'answer':
      return answerFilterSql(node, bag);
  }
  throw new Error(`unreachable filter node ${JSON.stringify(node)}`);
}

// Hidden-field entries are parallel arrays; t: 0 string (hf_strings), 1 bool (hf_bools), 2 number (hf_numbers).
type Branch = { t: 0 | 1 | 2; cond: string };
const ARRAY_OF: Record<Branch['t'], { arg: string; column: string }> = {
  0: { arg: 's', column: 'hf_strings' },
  1: { arg: 'b', column: 'hf_bools' },
  2: { arg: 'n', column: 'hf_numbers' },
};

/** arrayExists over the entries with that key (a placeholder) whose typed value satisfies one of the branches. */
function entryExists(keyParam: string, branches: Branch[]): string {
  const types = [...new Set(branches.map((b) => b.t))].sort();
  const args = ['k', 't', ...types.map((t) => ARRAY_OF[t].arg)];
  const columns = ['hf_keys', 'hf_types', ...types.map((t) => ARRAY_OF[t].column)];
  const conds = branches.map((b) => `(t = ${b.t} AND ${b.cond})`).join(' OR ');
  return `arrayExists((${args.join(', ')}) -> k = ${keyParam} AND (${conds}), ${columns.join(', ')})`;
}

/** A scalar read as a boolean, when it is one (booleans, "true"/"false"). */
export function scalarAsBool(x: Scalar): boolean | undefined {
  if (typeof x === 'boolean') return x;
  return x === 'true' ? true : x === 'false' ? false : undefined;
}

export const scalarAsText = (x: Scalar): string => (typeof x === 'string' ? x : String(x));

/**
 * `hf_pairs` (schema/004) holds each hidden-field entry as `key NUL tag text` (tag s string,
 * b bool, n number; text = the string, true/false, toString(Float64)), in a LowCardinality array:
 * `has()` on it is a dictionary lookup that reads ~50 bytes per row, where the arrays form reads
 * every entry's key, type and string (user agents...). hasAny() on it has no dictionary fast path,
 * so a few candidates are OR-ed has() and longer lists keep the arrays (bench/query/README.md,
 * "Figures behind the schema and the code").
 */
const MAX_PAIR_CANDIDATES = 8;
const NUL = '\u0000';

/** has(hf_pairs, …) per candidate entry of eq/in, or undefined when the arrays must answer. */
function pairsExpr(key: string, values: readonly Scalar[], bag: ParamBag): string | undefined {
  // Keys with NUL are not in hf_pairs. (A NUL in a value is harmless: the key has none, so the
  // first NUL ends it and the pair text is compared whole.)
  if (key.includes(NUL)) return undefined;
  const texts = new Set<string>();
  const numbers = new Set<number>();
  for (const x of values) {
    texts.add(`${key}${NUL}s${scalarAsText(x)}`);
    const b = scalarAsBool(x);
    if (b !== undefined) texts.add(`${key}${NUL}b${b}`);
    const n = scalarAsNumber(x);
    // 0 is stored as "0" or "-0" (toString keeps the sign); any other number is formatted by the
    // engine itself, so that the text is the one stored.
    if (n === 0) texts.add(`${key}${NUL}n0`).add(`${key}${NUL}n-0`);
    else if (n !== undefined) numbers.add(n);
    // Past the bound the arrays are used instead: stop building candidates (an `in` takes 1000 values).
    if (texts.size + numbers.size > MAX_PAIR_CANDIDATES) return undefined;
  }
  const candidates = [...texts].map((t) => `has(hf_pairs, ${bag.add(t, 'String')})`);
  if (numbers.size) {
    const prefix = bag.add(`${key}${NUL}n`, 'String');
    for (const n of numbers) candidates.push(`has(hf_pairs, concat(${prefix}, toString(${bag.add(n, 'Float64')})))`);
  }
  return candidates.length === 1 ? candidates[0] : `(${candidates.join(' OR ')})`;
}

function hiddenFieldExpr(node: Extract<FilterNode, { kind: 'hidden_field' }>, bag: ParamBag): string {
  if (node.op === 'eq' || node.op === 'in') {
    const viaPairs = pairsExpr(node.key, node.op === 'eq' ? node.values.slice(0, 1) : node.values, bag);
    if (viaPairs) return viaPairs;
  }
  const key = bag.add(node.key, 'String');
  switch (node.op) {
    case 'null':
      throw new Error('compileFilter handles null');
    case 'eq':
    case 'in': {
      const texts = node.values.map(scalarAsText);
      const numbers = node.values.map(scalarAsNumber).filter((n): n is number => n !== undefined);
      const bools = node.values.map(scalarAsBool).filter((b): b is boolean => b !== undefined);
      const one = node.op === 'eq';
      const branches: Branch[] = [{ t: 0, cond: one ? `s = ${bag.add(texts[0], 'String')}` : `has(${bag.add(texts, 'Array(String)')}, s)` }];
      if (numbers.length) branches.push({ t: 2, cond: one ? `n = ${bag.add(numbers[0], 'Float64')}` : `has(${bag.add(numbers, 'Array(Float64)')}, n)` });
      if (bools.length) branches.push({ t: 1, cond: one ? `b = ${bag.add(bools[0], 'Bool')}` : `has(${bag.add([...new Set(bools)], 'Array(Bool)')}, b)` });
      return entryExists(key, branches);
    }
    case 'contains':
      return entryExists(key, [{ t: 0, cond: `positionCaseInsensitiveUTF8(s, ${bag.add(node.value, 'String')}) > 0` }]);
    case 'gt':
    case 'lt':
      return comparisonExpr(node.op, key, node.value, bag);
    case 'before':
    case 'after':
      // Only entries that look like an ISO date take part.
      return entryExists(key, [{ t: 0, cond: textBeforeAfterSql(node.op, 's', bag.add(node.value, DT64)) }]);
  }
}

/** Bytes of a string entry kept in hf_string_heads (schema/080). */
const HEAD_BYTES = 32;

/**
 * `gt` / `lt`: a number entry compares by value, a string entry by text (byte order), read from
 * the typed columns of schema/080 instead of the five arrays. A head (the first HEAD_BYTES bytes
 * of a string) compares with a value of fewer bytes exactly as the whole string does: they differ
 * within the value's length or the head is longer than the value, and so is the string. Longer
 * values read hf_strings. The string branch is tried only for responses holding a string entry
 * of that key (most keys hold one type), after the number branch.
 */
function comparisonExpr(op: 'gt' | 'lt', keyParam: string, value: Scalar, bag: ParamBag): string {
  const cmp = op === 'gt' ? '>' : '<';
  const text = scalarAsText(value);
  const textParam = bag.add(text, 'String');
  const strings = Buffer.byteLength(text) < HEAD_BYTES
    ? `(has(hf_string_keys, ${keyParam}) AND arrayExists((k, h) -> k = ${keyParam} AND h ${cmp} ${textParam}, hf_string_keys, hf_string_heads))`
    : entryExists(keyParam, [{ t: 0, cond: `s ${cmp} ${textParam}` }]);
  const n = scalarAsNumber(value);
  if (n === undefined) return strings;
  return `(arrayExists((k, v) -> k = ${keyParam} AND v ${cmp} ${bag.add(n, 'Float64')}, hf_number_keys, hf_number_values) OR ${strings})`;
}


/**
 * Search is two queries, one after the other (search.ts):
 * 1. compileSearchCount: `total`, the number of matching responses, and how many of them are at
 *    or after each of a few window starts (1 hour, 1 day, 7, 30 and 365 days before the range end,
 *    or before now when the range ends later or not at all).
 * 2. compileSearchPage: the page, newest first, reading only from the smallest window that holds
 *    the newest `offset + size` matches (pageWindowStart). Every response of the window is newer
 *    than any response before it, so the page is the same as over the whole selection; but the engine
 *    sorts the window's rows instead of every matching row's created_at and id.
 * The count with its window counts costs about a plain count() (bench/query/README.md, "Figures
 * behind the schema and the code").
 */
export { PAGE_WINDOWS_SECONDS, windowStartsBefore } from '../query/page-windows.ts';

/** The window starts (DateTime64 texts, latest first) before min(range end, now, the cursor's position). */
export function pageWindowStarts(rangeEnd: string | undefined, nowMs: number, after?: ResponsePosition): string[] {
  return windowStartsBefore(pageWindowAnchor(rangeEnd, nowMs, after?.createdAt));
}

/**
 * The matches strictly after a cursor's position in the search order (created_at, id descending);
 * the `created_at <=` term lets the primary key skip what is newer.
 */
function afterSql(after: ResponsePosition, bag: ParamBag): string {
  const c = bag.add(after.createdAt, DT64);
  return `(created_at <= ${c} AND (created_at < ${c} OR id < ${bag.add(after.id, 'UUID')}))`;
}

/**
 * With windows, the count also returns `newest`, the created_at of the newest match: when every
 * match is older than the largest window (an org whose responses stopped over a year before the
 * range end), the page windows are taken before it instead (search.ts), not the whole selection.
 */
export function compileSearchCount(selection: ResponseSelection, windowStarts: readonly string[], after?: ResponsePosition): CompiledQuery {
  if (!after) {
    const weeks = wholeWeeksOf(selection.range, windowStarts);
    if (weeks.length > 0) return compileWeekSplitCount(selection, windowStarts, weeks);
  }
  const bag = new ParamBag();
  const source = fromSelection(selection, bag);
  if (!after) {
    const windows = windowCountColumns('created_at', windowStarts, bag);
    const newest = windowStarts.length > 0 ? ', toString(max(created_at)) AS newest' : '';
    return compiled(`SELECT count() AS total${windows}${newest} ${source}`, bag);
  }
  // With a cursor: `total` is still every match; the windows, `newest` and `after_total` count
  // the matches after the cursor, which the page is taken from.
  const cond = afterSql(after, bag);
  const windows = windowCountColumns('created_at', windowStarts, bag, cond);
  const newest = windowStarts.length > 0 ? `, toString(maxIf(created_at, ${cond})) AS newest` : '';
  return compiled(`SELECT count() AS total, countIf(${cond}) AS after_total${windows}${newest} ${source}`, bag);
}

/** µs in a week, and the first Monday after the epoch (1970-01-05 00:00 UTC). */
const MICROS_PER_WEEK = 7n * 86_400_000_000n;
const FIRST_MONDAY = 4n * 86_400_000_000n;
/**
 * The Mondays a week split may name: survey_responses' partition key toMonday(created_at) is a
 * Date (1970-01-01 .. 2149-06-06), so weeks well inside those years only (1971-01-04 .. 2148-01-22).
 */
const MIN_SPLIT_MONDAY = FIRST_MONDAY + 52n * MICROS_PER_WEEK;
const MAX_SPLIT_MONDAY = FIRST_MONDAY + 9290n * MICROS_PER_WEEK;
/** At most this many whole weeks are named (~10 years); older ones are counted with the range test. */
const MAX_SPLIT_WEEKS = 520;

/**
 * The whole weeks (their Mondays, µs, UTC) of a count that need no created_at test: every instant of
 * the week [Monday, Monday + 7 days) is inside the range (both bounds given), no window start falls
 * inside it (each window counts it whole or not at all), and it is not before the last window start
 * (so that `newest`, read only when no match is at or after that start, comes from the other weeks).
 * Newest first, at most MAX_SPLIT_WEEKS.
 */
export function wholeWeeksOf(range: ResponseSelection['range'], windowStarts: readonly string[]): bigint[] {
  const start = range?.start === undefined ? null : parseInstantMicros(range.start);
  const end = range?.end === undefined ? null : parseInstantMicros(range.end);
  if (start === null || end === null) return [];
  const windows = windowStarts.map((w) => parseInstantMicros(w));
  if (windows.some((w) => w === null)) return [];
  let low = start > MIN_SPLIT_MONDAY ? start : MIN_SPLIT_MONDAY;
  const last = windows[windows.length - 1];
  if (last !== undefined && last !== null && last > low) low = last;
  const weeks: bigint[] = [];
  // The last Monday whose week ends inside the range, then back to the first at or after `low`.
  let monday = floorWeek(end + 1n - MICROS_PER_WEEK);
  if (monday > MAX_SPLIT_MONDAY) monday = MAX_SPLIT_MONDAY;
  for (; monday >= low && weeks.length < MAX_SPLIT_WEEKS; monday -= MICROS_PER_WEEK) {
    const next = monday + MICROS_PER_WEEK;
    if (windows.some((w) => w !== null && w > monday && w < next)) continue;
    weeks.push(monday);
  }
  return weeks;
}

/** The Monday 00:00 UTC at or before an instant (µs). */
function floorWeek(t: bigint): bigint {
  const d = t - FIRST_MONDAY;
  const q = d / MICROS_PER_WEEK;
  return FIRST_MONDAY + (d % MICROS_PER_WEEK < 0n ? q - 1n : q) * MICROS_PER_WEEK;
}

/**
 * The partition id of a week of survey_responses: its partition key is toMonday(created_at)
 * (schema/004), a Date, whose partition id is the date as YYYYMMDD. test/integration/search-weeks.test.ts
 * fails if the key or the id's form changes.
 */
export function weekPartitionId(monday: bigint): string {
  return new Date(Number(monday / 1000n)).toISOString().slice(0, 10).replaceAll('-', '');
}

/**
 * The count (compileSearchCount's row, without a cursor) of a range holding whole weeks: the whole
 * weeks' matches are counted by partition (`_partition_id IN`), without testing created_at on their
 * rows, and the rest of the range (the edge weeks, the weeks a window start cuts) as before, in a
 * second read of the same snapshot (enable_shared_storage_snapshot_in_query, settings.ts). Reading and
 * testing created_at was ~100 of the ~350 ms of engine CPU of a count over 10M responses
 * (bench/query/README.md, "respondent alias contains, whole weeks"). Each version of a response
 * shares its created_at, so FINAL collapses versions within one partition, one branch.
 * A window counts a whole week when its Monday is at or after the window's start (no start falls
 * inside one). `newest` comes from the other weeks only: it is read (search.ts) only when no match
 * is at or after the last window start, and every whole week is at or after it, so then it holds no
 * match and `newest` is the newest match's created_at as before.
 */
function compileWeekSplitCount(selection: ResponseSelection, windowStarts: readonly string[], weeks: readonly bigint[]): CompiledQuery {
  const bag = new ParamBag();
  const ids = bag.add(weeks.map(weekPartitionId), 'Array(String)');
  const whole = fromSelection({ ...selection, range: undefined }, bag);
  const wholeWindows = windowStarts.map((w, i) => {
    const from = parseInstantMicros(w)!;
    const inside = weeks.filter((m) => m >= from);
    const counted = inside.length === weeks.length ? 'count()' : inside.length === 0 ? '0' : `countIf(_partition_id IN ${bag.add(inside.map(weekPartitionId), 'Array(String)')})`;
    return `, ${counted} AS w${i}`;
  }).join('');
  const rest = fromSelection(selection, bag);
  const restWindows = windowCountColumns('created_at', windowStarts, bag);
  const newest = windowStarts.length > 0;
  const wholeSql = `SELECT 0 AS r, count() AS total${wholeWindows}${newest ? `, toDateTime64(0, 6, 'UTC') AS newest` : ''} ${whole} AND _partition_id IN ${ids}`;
  const restSql = `SELECT 1 AS r, count() AS total${restWindows}${newest ? ', max(created_at) AS newest' : ''} ${rest} AND NOT (_partition_id IN ${ids})`;
  const sums = windowStarts.map((_, i) => `, sum(w${i}) AS w${i}`).join('');
  return compiled(`SELECT sum(total) AS total${sums}${newest ? ', toString(maxIf(newest, r = 1)) AS newest' : ''} FROM (${wholeSql} UNION ALL ${restSql})`, bag);
}

/**
 * One page of records (their `doc` and the columns that rebuild them: stored-doc.ts), newest first,
 * with each one's position (`c`, `i`: the next cursor); with
 * `windowStart` (a DateTime64 text), only from that instant on; with `after`, only after it.
 */
export function compileSearchPage(selection: ResponseSelection, size: number, offset: number, windowStart?: string, after?: ResponsePosition): CompiledQuery {
  const bag = new ParamBag();
  const source = fromSelection(selection, bag);
  const window = windowStart === undefined ? '' : ` AND created_at >= ${bag.add(windowStart, DT64)}`;
  const position = after ? ` AND ${afterSql(after, bag)}` : '';
  return compiled(
    `SELECT ${STORED_COLUMNS_SQL}, toString(created_at) AS c, toString(id) AS i ${source}${window}${position} ORDER BY created_at DESC, id DESC ` +
      `LIMIT ${bag.add(size, 'UInt32')} OFFSET ${bag.add(offset, 'UInt32')}`,
    bag,
  );
}

/**
 * The count row: `total`, `w<i>` the matches at or after window start i, and `newest` (with
 * windows); with a cursor, `after_total` (the matches after it), which `w<i>` and `newest` count.
 */
export type SearchCountRow = { total: number | string; after_total?: number | string; newest?: string } & Record<`w${number}`, number | string>;

/**
 * The smallest window that holds the newest `offset + size` matches (or every match, when there
 * are fewer), or undefined (the whole selection) when none does.
 */
export function pageWindowStart(row: SearchCountRow | undefined, windowStarts: readonly string[], offset: number, size: number): string | undefined {
  return row ? smallestWindowHolding(row, windowStarts, Math.min(offset + size, Number(row.total))) : undefined;
}
