import { STORED_COLUMNS_SQL } from '../../src/responses/stored-doc.ts';
import { expect } from 'chai';
import fc from 'fast-check';
import * as v from 'valibot';
import { ParamBag } from '../../src/clickhouse/sql.ts';
import { DomainError, parseOrThrow } from '../../src/errors.ts';
import { compileSelection } from '../../src/responses/compile.ts';
import { compileSearchCount, compileSearchPage, pageWindowStart, pageWindowStarts, weekPartitionId, wholeWeeksOf } from '../../src/responses/search-sql.ts';
import {
  HIDDEN_FIELD_OPERATORS, OPERATORS, RESPONSE_KEY_OPERATORS, parseSurveyIds, selectionEntries, selectionSchema, searchBodySchema,
  type FilterNode, type Operator,
} from '../../src/responses/filters.ts';

const ORG = '0f0f0f0f-0000-4000-8000-000000000001';
const U1 = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';
const U2 = 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb';

function parseFilters(filters: unknown[], filtersBool?: string): FilterNode[] {
  return parseOrThrow(selectionSchema, { filters, filters_bool: filtersBool }).filters;
}

/** Compiles one filter in an org-only scope: returns the filter's SQL and the params after p0 (org). */
function compileOne(filter: Record<string, unknown>) {
  const bag = new ParamBag();
  const where = compileSelection({ orgId: ORG, surveyIds: '*', filtersBool: 'AND', filters: parseFilters([filter]) }, bag);
  const prefix = 'org_id = {p0:UUID} AND (';
  expect(where.startsWith(prefix), where).to.equal(true);
  const { p0, ...rest } = bag.toParams();
  expect(p0).to.equal(ORG);
  return { sql: where.slice(prefix.length, -1), params: rest };
}

function badRequestOf(fn: () => unknown): DomainError {
  try {
    fn();
  } catch (e) {
    expect(e).to.be.instanceOf(DomainError);
    expect((e as DomainError).kind).to.equal('invalid');
    return e as DomainError;
  }
  throw new Error('expected a 400');
}

type Case = [filter: Record<string, unknown>, sql: string, params: Record<string, unknown>];
const r = (key: string, operator: string, arg?: { value?: unknown; values?: unknown[] }) => ({ type: 'response', key, operator, ...arg });
const hf = (key: string, operator: string, arg?: { value?: unknown; values?: unknown[] }) => ({ type: 'response.hidden_field', key, operator, ...arg });

const cases: Case[] = [
  // respondent_id / channel_id: UUID columns
  ...(['respondent_id', 'channel_id'] as const).flatMap((k): Case[] => [
    [r(k, 'eq', { value: U1 }), `${k} = {p1:UUID}`, { p1: U1 }],
    [r(k, 'neq', { value: U1.toUpperCase() }), `NOT (${k} = {p1:UUID})`, { p1: U1 }],
    [r(k, 'in', { values: [U1, U2] }), `${k} IN {p1:Array(UUID)}`, { p1: [U1, U2] }],
    [r(k, 'not_in', { values: [U1] }), `NOT (${k} IN {p1:Array(UUID)})`, { p1: [U1] }],
  ]),
  // respondent_segments: group ids
  [r('respondent_segments', 'eq', { value: U1 }), 'has(arrayMap(g -> toString(g), group_ids), toString({p1:UUID}))', { p1: U1 }],
  [r('respondent_segments', 'neq', { value: U1 }), 'NOT (has(arrayMap(g -> toString(g), group_ids), toString({p1:UUID})))', { p1: U1 }],
  [r('respondent_segments', 'in', { values: [U1, U2] }), 'hasAny(arrayMap(g -> toString(g), group_ids), arrayMap(g -> toString(g), {p1:Array(UUID)}))', { p1: [U1, U2] }],
  [r('respondent_segments', 'not_in', { values: [U2] }), 'NOT (hasAny(arrayMap(g -> toString(g), group_ids), arrayMap(g -> toString(g), {p1:Array(UUID)})))', { p1: [U2] }],
  // respondent_alias (and its plural spelling)
  // values no UUID text can match read alias_text (schema/266: the aliases that are not UUID texts, `\0a\0b\0`)
  [r('respondent_alias', 'eq', { value: 'Bob@x.io' }), 'position(alias_text, {p1:String}) > 0', { p1: '\0Bob@x.io\0' }],
  [r('respondent_aliases', 'neq', { value: 'bob' }), 'NOT (position(alias_text, {p1:String}) > 0)', { p1: '\0bob\0' }],
  [r('respondent_alias', 'eq', { value: '' }), 'position(alias_text, {p1:String}) > 0', { p1: '\0\0' }],
  [r('respondent_alias', 'eq', { value: 'Ölaf' }), 'position(alias_text, {p1:String}) > 0', { p1: '\0Ölaf\0' }],
  [r('respondent_alias', 'in', { values: ['a', 'Ölaf', 'a'] }), 'multiSearchAny(alias_text, {p1:Array(String)})', { p1: ['\0a\0', '\0Ölaf\0'] }],
  [r('respondent_alias', 'not_in', { values: ['a'] }), 'NOT (position(alias_text, {p1:String}) > 0)', { p1: '\0a\0' }],
  [r('respondent_alias', 'contains', { value: 'BoB' }), 'position(lower(alias_text), {p1:String}) > 0', { p1: 'bob' }],
  [r('respondent_alias', 'not_contains', { value: 'x' }), 'NOT (position(lower(alias_text), {p1:String}) > 0)', { p1: 'x' }],
  // an ASCII value with a run of 2+ bytes that are not letters: that run searched in the stored text first; without letters: no lower()
  [r('respondent_alias', 'contains', { value: 'User-42' }), '(position(alias_text, {p2:String}) > 0 AND position(lower(alias_text), {p1:String}) > 0)', { p1: 'user-42', p2: '-42' }],
  [r('respondent_alias', 'not_contains', { value: 'a.b@x-1' }), 'NOT ((position(alias_text, {p2:String}) > 0 AND position(lower(alias_text), {p1:String}) > 0))', { p1: 'a.b@x-1', p2: '-1' }],
  [r('respondent_alias', 'contains', { value: 'a.b@c' }), 'position(lower(alias_text), {p1:String}) > 0', { p1: 'a.b@c' }],
  [r('respondent_alias', 'contains', { value: '42@' }), 'position(alias_text, {p1:String}) > 0', { p1: '42@' }],
  [r('respondent_alias', 'contains', { value: 'Müller' }), "arrayExists(a -> positionCaseInsensitiveUTF8(a, {p1:String}) > 0, arrayMap(a -> replaceAll(a, '\\xFF', '\\0'), splitByChar('\\0', alias_text)))", { p1: 'Müller' }],
  // ... and the others every alias: a value with a NUL, a UUID text, a needle of hex digits and dashes, or without any other ASCII character
  [r('respondent_alias', 'contains', { value: 'x\0y' }), 'arrayExists(a -> positionCaseInsensitiveUTF8(a, {p1:String}) > 0, respondent_aliases)', { p1: 'x\0y' }],
  [r('respondent_alias', 'in', { values: ['a', 'n\0ul'] }), 'hasAny(respondent_aliases, {p1:Array(String)})', { p1: ['a', 'n\0ul'] }],
  [r('respondent_alias', 'eq', { value: U1 }), 'has(respondent_aliases, {p1:String})', { p1: U1 }],
  [r('respondent_alias', 'in', { values: ['bob', U2] }), 'hasAny(respondent_aliases, {p1:Array(String)})', { p1: ['bob', U2] }],
  [r('respondent_alias', 'contains', { value: 'BEEF-12' }), 'arrayExists(a -> positionCaseInsensitiveUTF8(a, {p1:String}) > 0, respondent_aliases)', { p1: 'BEEF-12' }],
  [r('respondent_alias', 'not_contains', { value: 'éü' }), 'NOT (arrayExists(a -> positionCaseInsensitiveUTF8(a, {p1:String}) > 0, respondent_aliases))', { p1: 'éü' }],
  // raw: the keyword is lower-cased like answer_text
  [r('raw', 'contains', { value: 'Great Product' }), 'answer_text LIKE {p1:String}', { p1: '%great product%' }],
  [r('raw', 'contains', { value: '50%_OFF\\' }), 'answer_text LIKE {p1:String}', { p1: '%50\\%\\_off\\\\%' }],
  [r('raw', 'not_contains', { value: 'BAD' }), 'NOT (answer_text LIKE {p1:String})', { p1: '%bad%' }],
  // language
  [r('language', 'eq', { value: 'fr' }), 'language = {p1:String}', { p1: 'fr' }],
  [r('language', 'neq', { value: 'fr' }), 'NOT (language = {p1:String})', { p1: 'fr' }],
  [r('language', 'in', { values: ['fr', 'en'] }), 'language IN {p1:Array(String)}', { p1: ['fr', 'en'] }],
  [r('language', 'not_in', { values: ['fr'] }), 'NOT (language IN {p1:Array(String)})', { p1: ['fr'] }],
  [r('language', 'null'), "language = ''", {}],
  [r('language', 'not_null'), "language != ''", {}],
  // completion
  [r('completion', 'eq', { value: 'fully_completed' }), 'completion = {p1:String}', { p1: 'fully_completed' }],
  [r('completion', 'neq', { value: 'not_started' }), 'NOT (completion = {p1:String})', { p1: 'not_started' }],
  [r('completion', 'in', { values: ['not_started', 'partially_completed'] }), 'completion IN {p1:Array(String)}', { p1: ['not_started', 'partially_completed'] }],
  [r('completion', 'not_in', { values: ['fully_completed'] }), 'NOT (completion IN {p1:Array(String)})', { p1: ['fully_completed'] }],
  // hidden fields: typed by the stored entry
  // eq / in: a few candidate entries of hf_pairs ("key NUL tag text"), each a dictionary lookup
  [hf('os', 'eq', { value: 'Linux' }), 'has(hf_pairs, {p1:String})', { p1: 'os\u0000sLinux' }],
  [hf('age', 'eq', { value: 30 }), '(has(hf_pairs, {p1:String}) OR has(hf_pairs, concat({p2:String}, toString({p3:Float64}))))', { p1: 'age\u0000s30', p2: 'age\u0000n', p3: 30 }],
  [hf('age', 'eq', { value: '30.5' }), '(has(hf_pairs, {p1:String}) OR has(hf_pairs, concat({p2:String}, toString({p3:Float64}))))', { p1: 'age\u0000s30.5', p2: 'age\u0000n', p3: 30.5 }],
  [hf('logged_in', 'eq', { value: true }), '(has(hf_pairs, {p1:String}) OR has(hf_pairs, {p2:String}))', { p1: 'logged_in\u0000strue', p2: 'logged_in\u0000btrue' }],
  [hf('n', 'eq', { value: 0 }), '(has(hf_pairs, {p1:String}) OR has(hf_pairs, {p2:String}) OR has(hf_pairs, {p3:String}))', { p1: 'n\u0000s0', p2: 'n\u0000n0', p3: 'n\u0000n-0' }],
  [hf('os', 'neq', { value: 'Linux' }), 'NOT (has(hf_pairs, {p1:String}))', { p1: 'os\u0000sLinux' }],
  [hf('x', 'in', { values: ['a', 2, false] }), '(has(hf_pairs, {p1:String}) OR has(hf_pairs, {p2:String}) OR has(hf_pairs, {p3:String}) OR has(hf_pairs, {p4:String}) OR has(hf_pairs, concat({p5:String}, toString({p6:Float64}))))', { p1: 'x\u0000sa', p2: 'x\u0000s2', p3: 'x\u0000sfalse', p4: 'x\u0000bfalse', p5: 'x\u0000n', p6: 2 }],
  [hf('os', 'not_in', { values: ['Linux', 'Mac'] }), 'NOT ((has(hf_pairs, {p1:String}) OR has(hf_pairs, {p2:String})))', { p1: 'os\u0000sLinux', p2: 'os\u0000sMac' }],
  // ... and the arrays when hf_pairs cannot answer: more than 8 candidates, a NUL in the key or a value
  [hf('os', 'in', { values: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'] }), 'arrayExists((k, t, s) -> k = {p1:String} AND ((t = 0 AND has({p2:Array(String)}, s))), hf_keys, hf_types, hf_strings)', { p1: 'os', p2: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'] }],
  [hf('o\u0000s', 'eq', { value: 'Linux' }), 'arrayExists((k, t, s) -> k = {p1:String} AND ((t = 0 AND s = {p2:String})), hf_keys, hf_types, hf_strings)', { p1: 'o\u0000s', p2: 'Linux' }],
  // A NUL in the value stays in the pair text, compared whole (the key, which has none, ends at the first NUL).
  [hf('os', 'eq', { value: 'Li\u0000nux' }), 'has(hf_pairs, {p1:String})', { p1: 'os\u0000sLi\u0000nux' }],
  [hf('age', 'in', { values: [30, 18] }), '(has(hf_pairs, {p1:String}) OR has(hf_pairs, {p2:String}) OR has(hf_pairs, concat({p3:String}, toString({p4:Float64}))) OR has(hf_pairs, concat({p3:String}, toString({p5:Float64}))))', { p1: 'age\u0000s30', p2: 'age\u0000s18', p3: 'age\u0000n', p4: 30, p5: 18 }],
  [hf('os', 'null'), 'NOT has(hf_keys, {p1:String})', { p1: 'os' }],
  [hf('os', 'not_null'), 'has(hf_keys, {p1:String})', { p1: 'os' }],
  [hf('page_title', 'contains', { value: 'Pricing' }), 'arrayExists((k, t, s) -> k = {p1:String} AND ((t = 0 AND positionCaseInsensitiveUTF8(s, {p2:String}) > 0)), hf_keys, hf_types, hf_strings)', { p1: 'page_title', p2: 'Pricing' }],
  [hf('page_title', 'not_contains', { value: 'x' }), 'NOT (arrayExists((k, t, s) -> k = {p1:String} AND ((t = 0 AND positionCaseInsensitiveUTF8(s, {p2:String}) > 0)), hf_keys, hf_types, hf_strings))', { p1: 'page_title', p2: 'x' }],
  // gt / lt: number entries by value, string entries by text, from the typed columns (schema/080);
  // a string value of 32 bytes or more compares with the whole strings of the arrays
  [hf('version', 'gt', { value: '2.0' }), '(arrayExists((k, v) -> k = {p1:String} AND v > {p3:Float64}, hf_number_keys, hf_number_values) OR (has(hf_string_keys, {p1:String}) AND arrayExists((k, h) -> k = {p1:String} AND h > {p2:String}, hf_string_keys, hf_string_heads)))', { p1: 'version', p2: '2.0', p3: 2 }],
  [hf('name', 'gt', { value: 'm' }), '(has(hf_string_keys, {p1:String}) AND arrayExists((k, h) -> k = {p1:String} AND h > {p2:String}, hf_string_keys, hf_string_heads))', { p1: 'name', p2: 'm' }],
  [hf('age', 'lt', { value: 18 }), '(arrayExists((k, v) -> k = {p1:String} AND v < {p3:Float64}, hf_number_keys, hf_number_values) OR (has(hf_string_keys, {p1:String}) AND arrayExists((k, h) -> k = {p1:String} AND h < {p2:String}, hf_string_keys, hf_string_heads)))', { p1: 'age', p2: '18', p3: 18 }],
  [hf('ua', 'lt', { value: 'Mozilla/5.0 (X11; Linux x86_64) Gecko' }), 'arrayExists((k, t, s) -> k = {p1:String} AND ((t = 0 AND s < {p2:String})), hf_keys, hf_types, hf_strings)', { p1: 'ua', p2: 'Mozilla/5.0 (X11; Linux x86_64) Gecko' }],
  [hf('signup', 'before', { value: '2024-01-02T03:04:05.123456+01:00' }), "arrayExists((k, t, s) -> k = {p1:String} AND ((t = 0 AND match(s, '^\\\\d{4}-\\\\d{2}-\\\\d{2}') AND ifNull(parseDateTime64BestEffortOrNull(s, 6, 'UTC') < {p2:DateTime64(6, 'UTC')}, false))), hf_keys, hf_types, hf_strings)", { p1: 'signup', p2: '2024-01-02 02:04:05.123456' }],
  [hf('signup', 'after', { value: '2024-01-02' }), "arrayExists((k, t, s) -> k = {p1:String} AND ((t = 0 AND match(s, '^\\\\d{4}-\\\\d{2}-\\\\d{2}') AND ifNull(parseDateTime64BestEffortOrNull(s, 6, 'UTC') > {p2:DateTime64(6, 'UTC')}, false))), hf_keys, hf_types, hf_strings)", { p1: 'signup', p2: '2024-01-02 00:00:00.000000' }],
];

describe('responses: filter compiler', () => {
  describe('every key × accepted operator', () => {
    for (const [filter, sql, params] of cases) {
      it(`${filter.type === 'response' ? '' : 'hidden '}${filter.key} ${filter.operator} ${JSON.stringify(filter.value ?? filter.values ?? '')}`, () => {
        const out = compileOne(filter);
        expect(out.sql).to.equal(sql);
        expect(out.params).to.deep.equal(params);
      });
    }

    it('alias `in` of more values than multiSearchAny takes: one multiSearchAny per 255', () => {
      const values = Array.from({ length: 600 }, (_, i) => `name-${i}`);
      const out = compileOne(r('respondent_alias', 'in', { values }));
      expect(out.sql).to.equal('(multiSearchAny(alias_text, {p1:Array(String)}) OR multiSearchAny(alias_text, {p2:Array(String)}) OR multiSearchAny(alias_text, {p3:Array(String)}))');
      expect(Object.values(out.params).flat()).to.deep.equal(values.map((v) => `\0${v}\0`));
      expect((out.params.p1 as string[]).length).to.equal(255);
    });

    it('the table above covers every accepted pair', () => {
      const covered = new Set(cases.map(([f]) => `${f.type === 'response' ? (f.key === 'respondent_aliases' ? 'respondent_alias' : f.key) : '*hidden*'}/${f.operator}`));
      const expected = [
        ...Object.entries(RESPONSE_KEY_OPERATORS).flatMap(([k, ops]) => ops.map((op) => `${k}/${op}`)),
        ...HIDDEN_FIELD_OPERATORS.map((op) => `*hidden*/${op}`),
      ];
      expect([...covered].sort()).to.deep.equal([...new Set(expected)].sort());
    });
  });

  describe('unsupported key/operator pairs', () => {
    const ok = r('language', 'eq', { value: 'fr' });
    for (const [key, accepted] of Object.entries(RESPONSE_KEY_OPERATORS)) {
      const refused = OPERATORS.filter((op) => !(accepted as readonly Operator[]).includes(op));
      for (const op of refused) {
        it(`${key} ${op} -> 400 naming filters[2] and listing ${accepted.join(', ')}`, () => {
          const err = badRequestOf(() => parseFilters([ok, ok, r(key, op, { value: 'x', values: ['x'] })]));
          expect(err.issues).to.deep.equal([
            { path: 'filters[2].operator', message: `operator "${op}" is not supported for key "${key}"; it accepts ${accepted.join(', ')}` },
          ]);
        });
      }
    }

    it('an unknown key lists the keys', () => {
      const err = badRequestOf(() => parseFilters([r('nope', 'eq', { value: 'x' })]));
      expect(err.issues![0].path).to.equal('filters[0].key');
      expect(err.issues![0].message).to.contain('respondent_id, channel_id');
    });

    it('an unknown operator is a 400 on operator', () => {
      const err = badRequestOf(() => parseFilters([r('raw', 'like', { value: 'x' })]));
      expect(err.issues![0].path).to.equal('filters[0].operator');
    });

    it('names every bad filter, not only the first', () => {
      const err = badRequestOf(() => parseFilters([r('raw', 'eq', { value: 'x' }), ok, hf('k', 'gt', { value: true })]));
      expect(err.issues!.map((i) => i.path)).to.deep.equal(['filters[0].operator', 'filters[2].value']);
    });
  });

  describe('arguments', () => {
    const bad: Array<[string, Record<string, unknown>, string]> = [
      ['in without values', r('language', 'in', { value: 'fr' }), 'filters[0].value'],
      ['in with empty values', r('language', 'in', { values: [] }), 'filters[0].values'],
      ['eq with values', r('language', 'eq', { values: ['fr'] }), 'filters[0].values'],
      ['eq without value', r('language', 'eq'), 'filters[0].value'],
      ['eq with null', r('language', 'eq', { value: null }), 'filters[0].value'],
      ['null with a value', r('language', 'null', { value: 'x' }), 'filters[0].value'],
      ['not_null with values', hf('os', 'not_null', { values: ['x'] }), 'filters[0].values'],
      ['respondent_id not a UUID', r('respondent_id', 'eq', { value: 'abc' }), 'filters[0].value'],
      ['channel_id list with a bad UUID', r('channel_id', 'in', { values: [U1, 'zz'] }), 'filters[0].values[1]'],
      ['segment not a UUID', r('respondent_segments', 'in', { values: [42] }), 'filters[0].values[0]'],
      ['completion unknown', r('completion', 'eq', { value: 'done' }), 'filters[0].value'],
      ['raw empty', r('raw', 'contains', { value: '' }), 'filters[0].value'],
      ['raw not a string', r('raw', 'contains', { value: 5 }), 'filters[0].value'],
      ['alias an object', r('respondent_alias', 'eq', { value: { a: 1 } }), 'filters[0].value'],
      ['value too long', r('respondent_alias', 'eq', { value: 'x'.repeat(1001) }), 'filters[0].value'],
      ['hidden gt with a boolean', hf('age', 'gt', { value: true }), 'filters[0].value'],
      ['hidden before not a date', hf('d', 'before', { value: 'yesterday' }), 'filters[0].value'],
      ['hidden eq with an object', hf('d', 'eq', { value: [1] }), 'filters[0].value'],
      ['hidden eq NaN-like', hf('d', 'in', { values: [null] }), 'filters[0].values[0]'],
      ['hidden key empty', hf('', 'eq', { value: 'x' }), 'filters[0].key'],
      ['bad type', { type: 'answer', key: 'x', operator: 'eq', value: 'x' }, 'filters[0].type'],
    ];
    for (const [name, filter, path] of bad) {
      it(`${name} -> 400 at ${path}`, () => {
        const err = badRequestOf(() => parseFilters([filter]));
        expect(err.issues!.map((i) => i.path)).to.include(path);
      });
    }

    it('type defaults to response', () => {
      expect(compileOne({ key: 'language', operator: 'eq', value: 'fr' }).sql).to.equal('language = {p1:String}');
    });
  });

  describe('injection strings only ever travel as params', () => {
    const evil = ["'); DROP TABLE survey_responses; --", '{p0:String}', "\\'", 'x} OR 1=1 --', '`doc`', '\u0000\n\t"', 'ÄÖ 🙂'];
    for (const s of evil) {
      it(JSON.stringify(s), () => {
        const filters = [
          r('respondent_alias', 'contains', { value: s }), r('respondent_alias', 'in', { values: [s, s] }),
          r('raw', 'contains', { value: s }), r('language', 'eq', { value: s }),
          hf(s, 'eq', { value: s }), hf(s, 'in', { values: [s] }), hf(s, 'contains', { value: s }), hf(s, 'gt', { value: s }), hf(s, 'null'),
        ];
        const bag = new ParamBag();
        const sql = compileSelection({ orgId: ORG, surveyIds: [U1], filtersBool: 'OR', filters: parseFilters(filters) }, bag);
        for (const piece of [s, s.toLowerCase(), 'DROP', 'OR 1=1'].filter((p) => p.length > 2 || p === s)) {
          if (piece === '{p0:String}') continue; // a real placeholder of that name exists: checked below
          expect(sql).not.to.contain(piece);
        }
        // Every placeholder is one the bag issued, in order.
        const placeholders = [...sql.matchAll(/\{(p\d+):/g)].map((m) => m[1]);
        expect(new Set(placeholders)).to.deep.equal(new Set(Object.keys(bag.toParams())));
        expect(Object.values(bag.toParams())).to.deep.include(s);
      });
    }
  });

  describe('scope', () => {
    it('org first, then surveys, the range, and the filters joined by OR in parentheses', () => {
      const bag = new ParamBag();
      const sql = compileSelection({
        orgId: ORG, surveyIds: [U1, U2], filtersBool: 'OR',
        filters: parseFilters([r('language', 'eq', { value: 'fr' }), r('completion', 'eq', { value: 'not_started' })]),
        range: { start: '2024-01-01 00:00:00.000000', end: '2024-01-31 23:59:59.999999' },
      }, bag);
      expect(sql).to.equal(
        "org_id = {p0:UUID} AND survey_id IN {p1:Array(UUID)} AND created_at >= {p2:DateTime64(6, 'UTC')} AND created_at <= {p3:DateTime64(6, 'UTC')} AND (language = {p4:String} OR completion = {p5:String})",
      );
      expect(bag.toParams()).to.deep.equal({ p0: ORG, p1: [U1, U2], p2: '2024-01-01 00:00:00.000000', p3: '2024-01-31 23:59:59.999999', p4: 'fr', p5: 'not_started' });
    });

    it('"*" and no filters: the org alone', () => {
      const bag = new ParamBag();
      expect(compileSelection({ orgId: ORG, surveyIds: '*', filtersBool: 'AND', filters: [] }, bag)).to.equal('org_id = {p0:UUID}');
    });

    it('AND joins and a half-open range', () => {
      const bag = new ParamBag();
      const sql = compileSelection({ orgId: ORG, surveyIds: '*', filtersBool: 'AND', filters: parseFilters([r('raw', 'contains', { value: 'a' }), r('raw', 'contains', { value: 'b' })]), range: { end: '2024-01-01 00:00:00.000000' } }, bag);
      expect(sql).to.equal("org_id = {p0:UUID} AND created_at <= {p1:DateTime64(6, 'UTC')} AND (answer_text LIKE {p2:String} AND answer_text LIKE {p3:String})");
    });
  });

  describe('search', () => {
    const scope = () => ({ orgId: ORG, surveyIds: [U1], filtersBool: 'AND' as const, filters: parseFilters([r('language', 'eq', { value: 'fr' })]) });
    it('compiles the count with one countIf per window start, and the newest match', () => {
      const count = compileSearchCount(scope(), ['2024-01-02 00:00:00.000000', '2024-01-01 00:00:00.000000']);
      expect(count.sql).to.equal(
        "SELECT count() AS total, countIf(created_at >= {p3:DateTime64(6, 'UTC')}) AS w0, countIf(created_at >= {p4:DateTime64(6, 'UTC')}) AS w1, toString(max(created_at)) AS newest " +
          'FROM survey_responses FINAL WHERE org_id = {p0:UUID} AND survey_id IN {p1:Array(UUID)} AND (language = {p2:String})',
      );
      expect(count.params).to.deep.equal({ p0: ORG, p1: [U1], p2: 'fr', p3: '2024-01-02 00:00:00.000000', p4: '2024-01-01 00:00:00.000000' });
      expect(Object.isFrozen(count)).to.equal(true);
      expect(Object.isFrozen(count.params)).to.equal(true);
    });
    it('compiles the page over the same scope, optionally from a window start', () => {
      const page = compileSearchPage(scope(), 25, 50);
      expect(page.sql).to.equal(
        `SELECT ${STORED_COLUMNS_SQL}, toString(created_at) AS c, toString(id) AS i FROM survey_responses FINAL WHERE org_id = {p0:UUID} AND survey_id IN {p1:Array(UUID)} AND (language = {p2:String}) ORDER BY created_at DESC, id DESC LIMIT {p3:UInt32} OFFSET {p4:UInt32}`,
      );
      expect(page.params).to.deep.equal({ p0: ORG, p1: [U1], p2: 'fr', p3: 25, p4: 50 });
      const windowed = compileSearchPage(scope(), 25, 50, '2024-01-02 00:00:00.000000');
      expect(windowed.sql).to.equal(
        `SELECT ${STORED_COLUMNS_SQL}, toString(created_at) AS c, toString(id) AS i FROM survey_responses FINAL WHERE org_id = {p0:UUID} AND survey_id IN {p1:Array(UUID)} AND (language = {p2:String}) AND created_at >= {p3:DateTime64(6, 'UTC')} ORDER BY created_at DESC, id DESC LIMIT {p4:UInt32} OFFSET {p5:UInt32}`,
      );
      expect(windowed.params).to.deep.equal({ p0: ORG, p1: [U1], p2: 'fr', p3: '2024-01-02 00:00:00.000000', p4: 25, p5: 50 });
      expect(Object.isFrozen(windowed)).to.equal(true);
    });
    it('with a cursor: the count adds the matches after it (windows and newest count only those), the page starts after it', () => {
      const after = { createdAt: '2024-01-01 10:00:00.000001', id: U2 };
      const count = compileSearchCount(scope(), ['2024-01-01 09:00:00.000001'], after);
      const cond = "(created_at <= {p3:DateTime64(6, 'UTC')} AND (created_at < {p3:DateTime64(6, 'UTC')} OR id < {p4:UUID}))";
      expect(count.sql).to.equal(
        `SELECT count() AS total, countIf(${cond}) AS after_total, countIf(${cond} AND created_at >= {p5:DateTime64(6, 'UTC')}) AS w0, toString(maxIf(created_at, ${cond})) AS newest ` +
          'FROM survey_responses FINAL WHERE org_id = {p0:UUID} AND survey_id IN {p1:Array(UUID)} AND (language = {p2:String})',
      );
      expect(count.params).to.deep.equal({ p0: ORG, p1: [U1], p2: 'fr', p3: '2024-01-01 10:00:00.000001', p4: U2, p5: '2024-01-01 09:00:00.000001' });
      const page = compileSearchPage(scope(), 25, 0, undefined, after);
      expect(page.sql).to.equal(
        `SELECT ${STORED_COLUMNS_SQL}, toString(created_at) AS c, toString(id) AS i FROM survey_responses FINAL WHERE org_id = {p0:UUID} AND survey_id IN {p1:Array(UUID)} AND (language = {p2:String}) AND ${cond} ORDER BY created_at DESC, id DESC LIMIT {p5:UInt32} OFFSET {p6:UInt32}`,
      );
    });
    it('whole weeks: inside both range bounds, cut by no window start, not before the last one', () => {
      const range = { start: '2024-01-01 00:00:00.000000', end: '2024-01-21 23:59:59.999999' };
      const mondays = (r: { start?: string; end?: string }, w: string[] = []) => wholeWeeksOf(r, w).map(weekPartitionId);
      expect(mondays(range)).to.deep.equal(['20240115', '20240108', '20240101']);
      expect(mondays({ ...range, start: '2024-01-01 00:00:00.000001' })).to.deep.equal(['20240115', '20240108']);
      expect(mondays({ ...range, end: '2024-01-21 23:59:59.999998' })).to.deep.equal(['20240108', '20240101']);
      expect(mondays(range, ['2024-01-10 12:00:00.000000'])).to.deep.equal(['20240115']);
      expect(mondays(range, ['2024-01-15 00:00:00.000000', '2024-01-08 00:00:00.000000'])).to.deep.equal(['20240115', '20240108']);
      expect(mondays(range, ['2023-01-01 00:00:00.000000'])).to.deep.equal(['20240115', '20240108', '20240101']);
      expect(mondays({ start: range.start })).to.deep.equal([]);
      expect(mondays({ end: range.end })).to.deep.equal([]);
      expect(mondays({ start: '2024-01-02 00:00:00.000000', end: '2024-01-08 23:00:00.000000' })).to.deep.equal([]);
    });
    it('a count over whole weeks: by partition for those, the range tested on the rest, in one query', () => {
      const range = { start: '2024-01-01 00:00:00.000000', end: '2024-01-21 23:59:59.999999' };
      const count = compileSearchCount({ ...scope(), range }, ['2024-01-21 00:00:00.000000', '2024-01-08 00:00:00.000000']);
      expect(count.sql).to.equal(
        "SELECT sum(total) AS total, sum(w0) AS w0, sum(w1) AS w1, toString(maxIf(newest, r = 1)) AS newest FROM (" +
          "SELECT 0 AS r, count() AS total, 0 AS w0, count() AS w1, toDateTime64(0, 6, 'UTC') AS newest FROM survey_responses FINAL WHERE org_id = {p1:UUID} AND survey_id IN {p2:Array(UUID)} AND (language = {p3:String}) AND _partition_id IN {p0:Array(String)} UNION ALL " +
          "SELECT 1 AS r, count() AS total, countIf(created_at >= {p9:DateTime64(6, 'UTC')}) AS w0, countIf(created_at >= {p10:DateTime64(6, 'UTC')}) AS w1, max(created_at) AS newest FROM survey_responses FINAL WHERE org_id = {p4:UUID} AND survey_id IN {p5:Array(UUID)} AND created_at >= {p6:DateTime64(6, 'UTC')} AND created_at <= {p7:DateTime64(6, 'UTC')} AND (language = {p8:String}) AND NOT (_partition_id IN {p0:Array(String)}))",
      );
      expect(count.params.p0).to.deep.equal(['20240108']);
      // With a cursor: the plain count.
      expect(compileSearchCount({ ...scope(), range }, [], { createdAt: '2024-01-10 00:00:00.000000', id: U2 }).sql).to.not.include('_partition_id');
    });
    const NOW = Date.UTC(2024, 5, 15, 12, 0, 0);
    it('window starts: 1 hour, 1 day, 7, 30 and 365 days before now without a range end', () => {
      expect(pageWindowStarts(undefined, NOW)).to.deep.equal([
        '2024-06-15 11:00:00.000000', '2024-06-14 12:00:00.000000', '2024-06-08 12:00:00.000000', '2024-05-16 12:00:00.000000', '2023-06-16 12:00:00.000000',
      ]);
    });
    it('window starts: before the range end when it is earlier than now, before now when later', () => {
      expect(pageWindowStarts('2024-01-10 00:00:00.000123', NOW)[0]).to.equal('2024-01-09 23:00:00.000123');
      expect(pageWindowStarts('2030-01-01 00:00:00.000000', NOW)[0]).to.equal('2024-06-15 11:00:00.000000');
    });
    const starts = ['h', 'd', 'w', 'm', 'y'];
    const row = { total: 40, w0: 3, w1: '12', w2: 20, w3: 30, w4: 40 };
    const windows: Array<[number, number, string | undefined]> = [
      [0, 3, 'h'], // the last hour holds the whole page
      [0, 4, 'd'], // one more row: the last day
      [2, 10, 'd'], // offset counts: 12 rows needed
      [10, 11, 'm'],
      [0, 40, 'y'],
      [30, 11, 'y'], // 41 rows asked, 40 in all: the year holds every match
    ];
    for (const [offset, size, expected] of windows) {
      it(`page window: offset ${offset}, size ${size} -> ${expected ?? 'none'}`, () => {
        expect(pageWindowStart(row, starts, offset, size)).to.equal(expected);
      });
    }
    it('page window: more matches before the largest window than the page can skip -> none (the whole scope)', () => {
      expect(pageWindowStart({ ...row, total: 50 }, starts, 38, 5)).to.equal(undefined);
    });
    it('page window: no count row -> none', () => {
      expect(pageWindowStart(undefined, starts, 0, 10)).to.equal(undefined);
    });
  });

  describe('body', () => {
    const parse = (body: unknown) => parseOrThrow(searchBodySchema, body);
    it('defaults: AND, no filters, size 10, offset 0', () => {
      expect(parse({})).to.deep.equal({ filters_bool: 'AND', filters: [], size: 10, offset: 0 });
    });
    it('accepts the edges of size and offset', () => {
      expect(parse({ size: 0, offset: 100000 })).to.include({ size: 0, offset: 100000 });
      expect(parse({ size: 1000 })).to.include({ size: 1000 });
    });
    it('offset over 100000 says to narrow the range', () => {
      const err = badRequestOf(() => parse({ offset: 100001 }));
      expect(err.issues![0].path).to.equal('offset');
      expect(err.issues![0].message).to.match(/next_cursor/);
    });
    for (const [body, path] of [
      [{ size: 1001 }, 'size'], [{ size: -1 }, 'size'], [{ size: 1.5 }, 'size'], [{ size: '10' }, 'size'],
      [{ offset: -1 }, 'offset'], [{ filters_bool: 'XOR' }, 'filters_bool'], [{ filters: {} }, 'filters'],
      [{ range: { field: 'updated_at' } }, 'range.field'], [{ range: { start: 'yesterday' } }, 'range.start'],
      [{ range: { start: '2024-02-01', end: '2024-01-01' } }, 'range.start'],
    ] as Array<[unknown, string]>) {
      it(`${JSON.stringify(body)} -> 400 at ${path}`, () => {
        expect(badRequestOf(() => parse(body)).issues!.map((i) => i.path)).to.include(path);
      });
    }
    it('range bounds become DateTime64 texts in UTC with microseconds', () => {
      expect(parse({ range: { field: 'created_at', start: '2024-01-01T01:00:00.5+01:00', end: '2024-01-31T23:59:59.999999Z' } }).range)
        .to.deep.equal({ field: 'created_at', start: '2024-01-01 00:00:00.500000', end: '2024-01-31 23:59:59.999999' });
    });
    it('extends for summary/aggregation', () => {
      const agg = v.object({ ...selectionEntries, group_by: v.array(v.object({ field: v.string() })) });
      expect(v.parse(agg, { group_by: [{ field: 'completion' }] }).filters_bool).to.equal('AND');
    });
  });

  describe('survey ids', () => {
    it('"*" is every survey', () => expect(parseSurveyIds('*')).to.equal('*'));
    it('a comma list, de-duplicated and lower-cased', () => {
      expect(parseSurveyIds(`${U1},${U2.toUpperCase()},${U1}`)).to.deep.equal([U1, U2]);
    });
    for (const bad of ['', ',', `${U1},`, 'abc', `${U1},*`, `'${U1}'`, `${U1};DROP`]) {
      it(`${JSON.stringify(bad)} -> 400`, () => {
        expect(badRequestOf(() => parseSurveyIds(bad)).issues![0].path).to.equal('survey_ids');
      });
    }
  });

  describe('random bodies (no engine)', () => {
    it('parse to nodes that compile, or throw a 400 — nothing else', () => {
      const scalar = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constantFrom(U1, 'fully_completed', '2024-01-01T00:00:00Z'));
      const filter = fc.record({
        type: fc.constantFrom('response', 'response.hidden_field', 'x', undefined),
        key: fc.constantFrom(...Object.keys(RESPONSE_KEY_OPERATORS), 'respondent_aliases', 'os', '', 'nope'),
        operator: fc.constantFrom(...OPERATORS, 'like'),
        value: fc.option(scalar, { nil: undefined }),
        values: fc.option(fc.array(scalar, { maxLength: 3 }), { nil: undefined }),
      }, { requiredKeys: [] });
      const body = fc.oneof(
        fc.record({ filters_bool: fc.constantFrom('AND', 'OR', 'x'), filters: fc.array(filter, { maxLength: 5 }), size: fc.integer({ min: -1, max: 1001 }), offset: fc.integer({ min: -1, max: 100001 }) }, { requiredKeys: [] }),
        fc.anything(),
      );
      fc.assert(fc.property(body, (b) => {
        try {
          const p = parseOrThrow(searchBodySchema, b);
          const bag = new ParamBag();
          const sql = compileSelection({ orgId: ORG, surveyIds: '*', filtersBool: p.filters_bool, filters: p.filters, range: p.range }, bag);
          const used = new Set([...sql.matchAll(/\{(p\d+):/g)].map((m) => m[1]));
          expect(used).to.deep.equal(new Set(Object.keys(bag.toParams())));
        } catch (e) {
          expect(e).to.be.instanceOf(DomainError);
          expect((e as DomainError).kind).to.equal('invalid');
        }
      }), { numRuns: 2000 });
    });
  });
});
