import { expect } from 'chai';
import fc from 'fast-check';
import { MAX_RESPONSE_BUCKETS, aggregationBodySchema, planLevels, shapeAggregation } from '../../src/responses/aggregation.ts';
import { compileAggregation, docCountSql, compileBounds, fieldsNeedingBounds, readBounds, type AggregationRow } from '../../src/responses/aggregation-sql.ts';
import type { ResponseSelection } from '../../src/responses/compile.ts';
import type { GroupByRule } from '../../src/responses/group-by.ts';
import { parseInstantMicros, planHistogram } from '../../src/query/histogram.ts';
import { DomainError, parseOrThrow } from '../../src/errors.ts';

const ORG = '11111111-1111-4111-8111-111111111111';
const JANUARY = { start: '2024-01-01 00:00:00.000000', end: '2024-01-31 23:59:59.999999' };
const scope = (over: Partial<ResponseSelection> = {}): ResponseSelection => ({ orgId: ORG, surveyIds: '*', filtersBool: 'AND', filters: [], range: JANUARY, ...over });
const DT = "DateTime64(6, 'UTC')";
const µs = (iso: string) => parseInstantMicros(iso)!;

const completion: GroupByRule = { kind: 'completion', field: 'completion' };
const createdByDay: GroupByRule = { kind: 'date', field: 'created_at', minInterval: 'day', buckets: 10 };

function issuesOf(body: unknown): { path: string; message: string }[] {
  try {
    parseOrThrow(aggregationBodySchema, body);
  } catch (err) {
    expect(err).to.be.instanceOf(DomainError);
    expect((err as DomainError).kind).to.equal('invalid');
    return (err as DomainError).issues ?? [];
  }
  throw new Error('expected a 400');
}

describe('aggregation: group_by schema', () => {
  it('parses every rule kind into its node', () => {
    const body = parseOrThrow(aggregationBodySchema, {
      size: 5, // ignored
      group_by: [
        { field: 'last_activity_at', date_histogram_min_interval: 'month', date_histogram_buckets: 12 },
        { field: 'hidden_field', hidden_field_key: 'support' },
        { field: 'answer', question_id: 'q-1' },
      ],
    });
    expect(body.group_by).to.deep.equal([
      { kind: 'date', field: 'last_activity_at', minInterval: 'month', buckets: 12 },
      { kind: 'hidden_field', field: 'hidden_field', key: 'support' },
      { kind: 'answer', field: 'answer', questionId: 'q-1' },
    ]);
    expect(body.filters_bool).to.equal('AND');
    expect(body).to.not.have.property('size');
    for (const field of ['completion', 'survey_id', 'end_reason'] as const) {
      expect(parseOrThrow(aggregationBodySchema, { group_by: [{ field }] }).group_by).to.deep.equal([{ kind: field, field }]);
    }
  });

  const invalid: Array<{ name: string; group_by: unknown; path: string }> = [
    { name: 'missing group_by', group_by: undefined, path: 'group_by' },
    { name: 'not an array', group_by: { field: 'completion' }, path: 'group_by' },
    { name: 'empty', group_by: [], path: 'group_by' },
    { name: 'more than 3 levels', group_by: [{ field: 'completion' }, { field: 'survey_id' }, { field: 'end_reason' }, { field: 'completion' }], path: 'group_by' },
    { name: 'unknown field', group_by: [{ field: 'completion' }, { field: 'colour' }], path: 'group_by[1].field' },
    { name: 'rule not an object', group_by: ['completion'], path: 'group_by[0]' },
    { name: 'buckets 0', group_by: [{ field: 'completion' }, { field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 0 }], path: 'group_by[1].date_histogram_buckets' },
    { name: 'buckets 101', group_by: [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 101 }], path: 'group_by[0].date_histogram_buckets' },
    { name: 'buckets 2.5', group_by: [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 2.5 }], path: 'group_by[0].date_histogram_buckets' },
    { name: 'buckets as text', group_by: [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: '10' }], path: 'group_by[0].date_histogram_buckets' },
    { name: 'missing buckets', group_by: [{ field: 'ended_at', date_histogram_min_interval: 'day' }], path: 'group_by[0].date_histogram_buckets' },
    { name: 'bad min interval', group_by: [{ field: 'ended_at', date_histogram_min_interval: 'week', date_histogram_buckets: 5 }], path: 'group_by[0].date_histogram_min_interval' },
    { name: 'hidden_field without key', group_by: [{ field: 'completion' }, { field: 'completion' }, { field: 'hidden_field' }], path: 'group_by[2].hidden_field_key' },
    { name: 'hidden_field with empty key', group_by: [{ field: 'hidden_field', hidden_field_key: '' }], path: 'group_by[0].hidden_field_key' },
    { name: 'answer without question_id', group_by: [{ field: 'answer' }], path: 'group_by[0].question_id' },
    { name: 'answer with a numeric question_id', group_by: [{ field: 'answer', question_id: 7 }], path: 'group_by[0].question_id' },
    // Rules are strict like every object of a request body (an extra field was ignored).
    { name: 'a rule with an unknown member', group_by: [{ field: 'answer', question_id: 'q-1', ignored: true }], path: 'group_by[0].ignored' },
    { name: 'a date rule with an unknown member', group_by: [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 5, interval: 'day' }], path: 'group_by[0].interval' },
  ];
  for (const c of invalid) {
    it(`400 naming the rule: ${c.name} -> ${c.path}`, () => {
      const issues = issuesOf(c.group_by === undefined ? {} : { group_by: c.group_by });
      expect(issues.map((i) => i.path)).to.include(c.path);
      for (const i of issues) expect(i.message).to.be.a('string').and.not.equal('');
    });
  }

  it('property: any JSON as group_by parses or is a 400, never another error', () => {
    const rule = fc.oneof(
      fc.record({ field: fc.constantFrom('created_at', 'ended_at', 'last_activity_at', 'x'), date_histogram_min_interval: fc.constantFrom('hour', 'day', 'month', 'year', 3), date_histogram_buckets: fc.oneof(fc.integer({ min: -5, max: 120 }), fc.double(), fc.string()) }, { requiredKeys: [] }),
      fc.record({ field: fc.constantFrom('completion', 'survey_id', 'end_reason', 'hidden_field', 'answer', 'nope'), hidden_field_key: fc.oneof(fc.string(), fc.integer()), question_id: fc.oneof(fc.string(), fc.constant(null)) }, { requiredKeys: ['field'] }),
      fc.jsonValue(),
    );
    fc.assert(
      fc.property(fc.oneof(fc.array(rule, { maxLength: 5 }), fc.jsonValue()), (groupBy) => {
        try {
          const body = parseOrThrow(aggregationBodySchema, { group_by: groupBy });
          expect(body.group_by.length).to.be.within(1, 3);
        } catch (err) {
          expect(err).to.be.instanceOf(DomainError);
          expect((err as DomainError).kind).to.equal('invalid');
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('aggregation: series plans', () => {
  it('uses the range when both sides are given (no bounds query)', () => {
    expect(fieldsNeedingBounds([createdByDay], JANUARY)).to.deep.equal([]);
    const [plan] = planLevels([createdByDay], JANUARY, {});
    expect(plan!.interval).to.equal('4 day');
    expect(plan!.starts.length).to.equal(8);
    expect(plan!.start).to.equal(µs('2024-01-01T00:00:00Z'));
  });

  it('takes a missing side from the data, the first value truncated to the min interval', () => {
    const rules: GroupByRule[] = [completion, { kind: 'date', field: 'ended_at', minInterval: 'day', buckets: 100 }, { kind: 'date', field: 'ended_at', minInterval: 'hour', buckets: 100 }];
    expect(fieldsNeedingBounds(rules, undefined)).to.deep.equal(['ended_at']);
    expect(fieldsNeedingBounds(rules, { start: JANUARY.start })).to.deep.equal(['ended_at']);
    const bounds = readBounds(['ended_at'], { min_0: '2024-01-03 13:14:15.123456', max_0: '2024-01-05 01:00:00.000000' });
    const plans = planLevels(rules, undefined, bounds);
    expect(plans[0]).to.equal(undefined);
    expect(plans[1]!.start).to.equal(µs('2024-01-03T00:00:00Z'));
    expect(plans[1]!.starts.length).to.equal(3);
    expect(plans[2]!.start).to.equal(µs('2024-01-03T13:00:00Z'));
    // range.start given, end from the data
    const half = planLevels([rules[1]], { start: '2024-01-04 12:00:00.000000' }, bounds)[0]!;
    expect(half.start).to.equal(µs('2024-01-04T12:00:00Z'));
    expect(half.end).to.equal(µs('2024-01-05T01:00:00Z'));
  });

  it('no value of the field in scope -> an empty series', () => {
    const bounds = readBounds(['ended_at'], { min_0: null, max_0: null });
    const [plan] = planLevels([{ kind: 'date', field: 'ended_at', minInterval: 'day', buckets: 5 }], undefined, bounds);
    expect(plan!.starts).to.deep.equal([]);
    expect(plan!.interval).to.equal('1 day');
  });

  it('compiles the bounds query over the same scope', () => {
    const q = compileBounds(scope({ range: undefined, surveyIds: ['aaaaaaaa-0000-4000-8000-000000000001'] }), ['created_at', 'last_activity_at']);
    expect(q.sql).to.equal(
      'SELECT toString(minOrNull(created_at)) AS min_0, toString(maxOrNull(created_at)) AS max_0, ' +
        'toString(minOrNull(last_answer_at)) AS min_1, toString(maxOrNull(last_answer_at)) AS max_1 ' +
        'FROM survey_responses FINAL WHERE org_id = {p0:UUID} AND survey_id IN {p1:Array(UUID)}',
    );
    expect(q.params).to.deep.equal({ p0: ORG, p1: ['aaaaaaaa-0000-4000-8000-000000000001'] });
  });
});

describe('aggregation: docCountSql (each response once per bucket)', () => {
  const answer: GroupByRule = { kind: 'answer', field: 'answer', questionId: 'q' };
  const first = (l: number) => `tupleElement(level${l}_j, 2) = 1`;
  const cases: Array<[string, GroupByRule[], string]> = [
    ['single-valued levels: count()', [completion, createdByDay], 'count()'],
    ['one multi-valued level: the total counts its first values', [answer], `multiIf(depth = 0, countIf(${first(1)}), count())`],
    ['multi-valued in the middle: depths above it filter on it, the date level below does not', [completion, answer, createdByDay], `multiIf(depth = 0, countIf(${first(2)}), depth = 1, countIf(${first(2)}), depth = 2, count(), count())`],
    ['two multi-valued levels', [answer, answer], `multiIf(depth = 0, countIf(${first(1)} AND ${first(2)}), depth = 1, countIf(${first(2)}), count())`],
  ];
  for (const [name, rules, sql] of cases) it(name, () => expect(docCountSql(rules)).to.equal(sql));
});

describe('aggregation: compileAggregation', () => {
  /** The grouped query of a first level `k1` then created_at by day over January. */
  const groupedByDay = (k1: string) =>
    `SELECT ${k1} AS k1, ` +
    // A key with parameters is salted with its level (ranked-buckets.ts): two date levels can be one expression.
    `tupleElement(tuple(if(created_at >= {p3:${DT}} AND created_at < {p4:${DT}}, intDiv(toUnixTimestamp64Micro(created_at) - toUnixTimestamp64Micro({p3:${DT}}), {p5:Int64}), NULL), 2), 1) AS k2, ` +
    '2 - bitCount(grouping(k1, k2)) AS depth, count() AS doc_count ' +
    `FROM survey_responses FINAL WHERE org_id = {p0:UUID} AND created_at >= {p1:${DT}} AND created_at <= {p2:${DT}} ` +
    'GROUP BY ROLLUP(k1, k2)';
  const byDayParams = {
    p0: ORG,
    p1: JANUARY.start,
    p2: JANUARY.end,
    p3: '2024-01-01 00:00:00.000000', // series start = range start
    p4: '2024-02-02 00:00:00.000000', // boundary after 8 buckets of 4 days
    p5: '345600000000', // 4 days in µs
    p6: 100,
  };

  it('completion then created_at by day: rollup, dense-series arithmetic as parameters, no ranking (no level can pass 100 buckets)', () => {
    const rules = [completion, createdByDay];
    const q = compileAggregation(scope(), rules, planLevels(rules, JANUARY, {}));
    expect(q.sql).to.equal(
      `SELECT depth, k1, k2, doc_count, toUInt64(0) AS other_doc_count FROM (${groupedByDay('completion')}) WHERE (depth < 1 OR k1 IS NOT NULL) AND (depth < 2 OR k2 IS NOT NULL) AND doc_count > 0 ORDER BY depth`,
    );
    expect(q.params).to.deep.equal(byDayParams);
    expect(Object.isFrozen(q)).to.equal(true);
  });

  it('end_reason then created_at by day: rollup, ranking, dense-series arithmetic as parameters', () => {
    const rules: GroupByRule[] = [{ kind: 'end_reason', field: 'end_reason' }, createdByDay];
    const q = compileAggregation(scope(), rules, planLevels(rules, JANUARY, {}));
    const ranked =
      'SELECT k1, k2, depth, doc_count, row_number() OVER (PARTITION BY depth, if(depth >= 2, k1, NULL) ORDER BY doc_count DESC, multiIf(depth = 1, toString(k1), toString(k2)) ASC) AS r ' +
      `FROM (${groupedByDay('if(empty(end_reason), NULL, end_reason)')}) WHERE (depth < 1 OR k1 IS NOT NULL) AND (depth < 2 OR k2 IS NOT NULL) AND doc_count > 0`;
    const withContext =
      'SELECT k1, k2, depth, doc_count, r, sum(if(r > {p6:UInt32}, doc_count, 0)) OVER (PARTITION BY depth, if(depth >= 2, k1, NULL)) AS other_doc_count, ' +
      `max(if(depth = 1, r, 0)) OVER (PARTITION BY if(depth >= 1, k1, NULL)) AS r1 FROM (${ranked})`;
    expect(q.sql).to.equal(
      `SELECT depth, k1, k2, doc_count, other_doc_count FROM (${withContext}) WHERE r <= {p6:UInt32} AND (depth < 2 OR r1 <= {p6:UInt32}) ORDER BY depth`,
    );
    expect(q.params).to.deep.equal(byDayParams);
    expect(Object.isFrozen(q)).to.equal(true);
  });

  it('a month level steps with calendar months from the series start', () => {
    const rules: GroupByRule[] = [{ kind: 'date', field: 'ended_at', minInterval: 'month', buckets: 12 }];
    const q = compileAggregation(scope(), rules, planLevels(rules, JANUARY, {}));
    expect(q.sql).to.contain(
      `SELECT if(ended_at >= {p3:${DT}} AND ended_at < {p4:${DT}}, (intDiv(toRelativeMonthNum(ended_at) - toRelativeMonthNum({p3:${DT}}), {p5:UInt32}) AS level1_steps) - (ended_at < addMonths({p3:${DT}}, level1_steps * {p5:UInt32})), NULL) AS k1, 1 - bitCount(grouping(k1)) AS depth, count() AS doc_count FROM survey_responses FINAL WHERE org_id = {p0:UUID}`,
    );
    expect(q.params).to.deep.equal({ p0: ORG, p1: JANUARY.start, p2: JANUARY.end, p3: '2024-01-01 00:00:00.000000', p4: '2024-02-01 00:00:00.000000', p5: 1, p6: 100 });
  });

  it('answer and hidden_field levels: one row per distinct value (NULL when none), each response counted once per bucket', () => {
    const rules: GroupByRule[] = [{ kind: 'answer', field: 'answer', questionId: "q'1" }, { kind: 'hidden_field', field: 'hidden_field', key: 'support' }];
    const q = compileAggregation(scope({ range: undefined }), rules, [undefined, undefined]);
    expect(q.sql).to.contain(
      "SELECT tupleElement(arrayJoin(arrayMap((v, i) -> (v, i, 1), if(empty(arrayDistinct(arrayFilter((v, q) -> q = {p1:String}, ans_values, ans_question_ids)) AS level1_values), [NULL], CAST(level1_values, 'Array(Nullable(String))')) AS level1_list, arrayEnumerate(level1_list))) AS level1_j, 1) AS k1, " +
        "tupleElement(tuple(tupleElement(arrayJoin(arrayMap((v, i) -> (v, i, 2), if(empty(arrayDistinct(arrayMap(p -> substring(p, length({p2:String}) + 2), arrayFilter(p -> startsWith(p, {p2:String}), hf_pairs))) AS level2_values), [NULL], CAST(level2_values, 'Array(Nullable(String))')) AS level2_list, arrayEnumerate(level2_list))) AS level2_j, 1), 2), 1) AS k2, " +
        '2 - bitCount(grouping(k1, k2)) AS depth, ' +
        // depth 0 (all responses): the row of the first value of both levels; depth 1: of level 2; leaves: every row
        'multiIf(depth = 0, countIf(tupleElement(level1_j, 2) = 1 AND tupleElement(level2_j, 2) = 1), depth = 1, countIf(tupleElement(level2_j, 2) = 1), count()) AS doc_count ' +
        'FROM survey_responses FINAL WHERE org_id = {p0:UUID} GROUP BY ROLLUP(k1, k2)',
    );
    // the question id travels as a parameter, quote and all
    expect(q.params).to.deep.equal({ p0: ORG, p1: "q'1", p2: 'support\u0000', p3: 100 });
  });

  it('a hidden_field key holding NUL reads the hidden-field arrays (hf_pairs leaves such keys out)', () => {
    const rules: GroupByRule[] = [{ kind: 'hidden_field', field: 'hidden_field', key: 'a\u0000b' }];
    const q = compileAggregation(scope({ range: undefined }), rules, [undefined]);
    expect(q.sql).to.contain(
      "arrayDistinct(arrayFilter((v, k) -> k = {p1:String}, arrayMap((t, s, b, n) -> multiIf(t = 0, s, t = 1, if(b, 'true', 'false'), toString(n)), hf_types, hf_strings, hf_bools, hf_numbers), hf_keys)) AS level1_values",
    );
    expect(q.params).to.deep.equal({ p0: ORG, p1: 'a\u0000b', p2: 100 });
  });

  it('three levels: survey, end_reason, histogram; ancestors ranked at both upper levels', () => {
    const rules: GroupByRule[] = [{ kind: 'survey_id', field: 'survey_id' }, { kind: 'end_reason', field: 'end_reason' }, { kind: 'date', field: 'last_activity_at', minInterval: 'hour', buckets: 24 }];
    const q = compileAggregation(scope({ surveyIds: ['aaaaaaaa-0000-4000-8000-000000000001'] }), rules, planLevels(rules, JANUARY, {}));
    expect(q.sql).to.contain('SELECT survey_id AS k1, if(empty(end_reason), NULL, end_reason) AS k2, tupleElement(tuple(if(last_answer_at >= {p4:');
    expect(q.sql).to.contain('3 - bitCount(grouping(k1, k2, k3)) AS depth, count() AS doc_count');
    expect(q.sql).to.contain('PARTITION BY depth, if(depth >= 2, k1, NULL), if(depth >= 3, k2, NULL) ORDER BY doc_count DESC, multiIf(depth = 1, toString(k1), depth = 2, toString(k2), toString(k3)) ASC');
    expect(q.sql).to.contain('max(if(depth = 2, r, 0)) OVER (PARTITION BY if(depth >= 2, k1, NULL), if(depth >= 2, k2, NULL)) AS r2');
    expect(q.sql).to.contain('WHERE r <= {p7:UInt32} AND (depth < 2 OR r1 <= {p7:UInt32}) AND (depth < 3 OR r2 <= {p7:UInt32}) ORDER BY depth');
    expect(q.params).to.deep.equal({
      p0: ORG,
      p1: ['aaaaaaaa-0000-4000-8000-000000000001'],
      p2: JANUARY.start,
      p3: JANUARY.end,
      p4: '2024-01-01 00:00:00.000000',
      p5: '2024-02-01 00:00:00.000000', // 24 buckets of 31 hours = 744 h = all of January
      p6: '111600000000',
      p7: 100,
    });
  });
});

describe('aggregation: shapeAggregation', () => {
  const plan = planHistogram(µs('2024-01-01T00:00:00Z'), µs('2024-01-03T12:00:00Z'), 'day', 10);

  it('nests levels, fills every date bucket and all three completion values', () => {
    const rows: AggregationRow[] = [
      { depth: 0, k1: null, k2: null, doc_count: 7, other_doc_count: 0 },
      { depth: 1, k1: 'fully_completed', k2: null, doc_count: 5, other_doc_count: 0 },
      { depth: 1, k1: 'partially_completed', k2: null, doc_count: 2, other_doc_count: 0 },
      { depth: 2, k1: 'fully_completed', k2: 0, doc_count: 4, other_doc_count: 0 },
      { depth: 2, k1: 'fully_completed', k2: 2, doc_count: 1, other_doc_count: 0 },
      { depth: 2, k1: 'partially_completed', k2: 1, doc_count: 2, other_doc_count: 0 },
    ];
    const series = (counts: number[]) => ({
      field: 'created_at',
      interval: '1 day',
      buckets: ['2024-01-01', '2024-01-02', '2024-01-03'].map((d, i) => ({ key: `${d}T00:00:00.000000Z`, doc_count: counts[i] })),
    });
    expect(shapeAggregation([completion, createdByDay], [undefined, plan], rows, 3)).to.deep.equal({
      took: 3,
      hits: { total: { value: 7 } },
      aggregations: {
        field: 'completion',
        buckets: [
          { key: 'fully_completed', doc_count: 5, aggregations: series([4, 0, 1]) },
          { key: 'partially_completed', doc_count: 2, aggregations: series([0, 2, 0]) },
          { key: 'not_started', doc_count: 0, aggregations: series([0, 0, 0]) },
        ],
        other_doc_count: 0,
      },
    });
  });

  it('orders terms largest first, ties by key; carries other_doc_count and the rule parameters', () => {
    const rows: AggregationRow[] = [
      { depth: 0, k1: null, doc_count: 9, other_doc_count: 0 },
      { depth: 1, k1: 'b', doc_count: 2, other_doc_count: 4 },
      { depth: 1, k1: 'c', doc_count: 5, other_doc_count: 4 },
      { depth: 1, k1: 'a', doc_count: 2, other_doc_count: 4 },
    ];
    const shaped = shapeAggregation([{ kind: 'hidden_field', field: 'hidden_field', key: 'support' }], [undefined], rows, 1);
    expect(shaped.aggregations).to.deep.equal({
      field: 'hidden_field',
      hidden_field_key: 'support',
      buckets: [{ key: 'c', doc_count: 5 }, { key: 'a', doc_count: 2 }, { key: 'b', doc_count: 2 }],
      other_doc_count: 4,
    });
    const answer = shapeAggregation([{ kind: 'answer', field: 'answer', questionId: 'q1' }], [undefined], [], 0);
    expect(answer).to.deep.equal({ took: 0, hits: { total: { value: 0 } }, aggregations: { field: 'answer', question_id: 'q1', buckets: [], other_doc_count: 0 } });
  });

  it('more than MAX_RESPONSE_BUCKETS buckets in the body is a 400 query_too_expensive', () => {
    const wide = planHistogram(µs('2024-01-01T00:00:00Z'), µs('2024-03-01T00:00:00Z'), 'hour', 100);
    const rules: GroupByRule[] = [{ kind: 'answer', field: 'answer', questionId: 'q' }, { kind: 'date', field: 'created_at', minInterval: 'hour', buckets: 100 }, { kind: 'date', field: 'ended_at', minInterval: 'hour', buckets: 100 }];
    const rows: AggregationRow[] = Array.from({ length: 8 }, (_, i) => ({ depth: 1, k1: `v${i}`, doc_count: 1, other_doc_count: 0 }));
    expect(() => shapeAggregation(rules, [undefined, wide, wide], rows, 0)).to.throw(DomainError).with.property('code', 'query_too_expensive');
    expect(() => shapeAggregation(rules, [undefined, wide, wide], rows.slice(0, 6), 0)).to.not.throw();
    expect(MAX_RESPONSE_BUCKETS).to.equal(65_536);
  });

  it('an empty scope still gives the dense series with zeros', () => {
    const shaped = shapeAggregation([createdByDay], [plan], [], 0);
    expect(shaped.hits.total.value).to.equal(0);
    expect(shaped.aggregations.buckets.map((b) => b.doc_count)).to.deep.equal([0, 0, 0]);
  });
});
