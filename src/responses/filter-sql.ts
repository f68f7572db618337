/**
 * Pure compiler of one filter node (filters.ts, answer-filter.ts) -> a parameterised condition on
 * `survey_responses`: the respondent alias, segment, hidden-field and answer tests. compile.ts
 * joins them into the selection's WHERE.
 *
 * Values only ever travel as query parameters (ParamBag); the only text spliced into SQL is
 * column names, operators and type literals from this file.
 */
import { DT64, likeContaining, type ParamBag } from '../clickhouse/sql.ts';
import { scalarAsNumber, textBeforeAfterSql } from '../query/filter-args.ts';
import type { FilterNode, Scalar } from './filters.ts';
import { answerFilterSql } from './answer-filter.ts';

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
