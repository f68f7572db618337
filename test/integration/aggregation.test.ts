import { expect } from 'chai';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { ParamBag, type RunQuery } from '../../src/clickhouse/sql.ts';
import { levelKeySql, type GroupByRule } from '../../src/responses/group-by.ts';
import { planLevels, runAggregation } from '../../src/responses/aggregation.ts';
import { compileAggregation, compileDenseAggregation } from '../../src/responses/aggregation-sql.ts';
import { selectionOf } from '../../src/responses/compile.ts';
import { filterSchema, type FilterNode } from '../../src/responses/filters.ts';
import * as v from 'valibot';
import { PINNED_SETTINGS } from '../../src/clickhouse/settings.ts';
import { bucketIndex, formatDbMicros, formatMicros, parseInstantMicros, planHistogram, truncateTo, type HistogramPlan, type MinInterval } from '../../src/query/histogram.ts';
import { startTestService, type TestService } from './harness.ts';
import { isoMicros, rng } from './random.ts';

/**
 * The aggregation over HTTP, checked against a reference aggregator written here in plain JS over
 * the records that were written. The reference shares only the series arithmetic (histogram.ts,
 * unit-tested on its own, and checked against the engine's bucket expression below).
 */

type Rec = Record<string, any>;
type Rule = Record<string, any>;

const uuid = () => randomUUID();
const CHOICE_Q = uuid();
const iso = isoMicros;

function makeRecords(n: number, surveys: string[], seed: number, from = Date.UTC(2024, 0, 1), days = 45): Rec[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
  return Array.from({ length: n }, (_, i) => {
    const created = from + Math.floor(r() * days * 86_400_000);
    const active = r() < 0.3;
    const choices = r() < 0.15 ? [] : r() < 0.3 ? [pick(['red', 'green', 'blue']), pick(['red', 'green', 'blue'])] : [pick(['red', 'green', 'blue', 'Ünïcode'])];
    const hidden: Rec[] = [];
    if (r() < 0.85) hidden.push({ key: 'support', t: 0, v_s: pick(['desktop', 'mobile']) });
    hidden.push(pick([{ key: 'logged_in', t: 1, v_b: true }, { key: 'logged_in', t: 1, v_b: false }, { key: 'plan', t: 2, v_d: pick([1, 2, 3.5]) }]));
    return {
      id: uuid(),
      channel_id: uuid(),
      respondent_id: uuid(),
      survey_id: pick(surveys),
      language: pick(['en', 'fr']),
      completion: pick(['partially_completed', 'fully_completed', 'fully_completed']), // never not_started: zero-fill is visible
      active,
      end_reason: active ? '' : pick(['closed', 'completed', 'expired']),
      ended_at: active ? '' : iso(created + Math.floor(r() * 72) * 3_600_000),
      created_at: iso(created, i % 1000),
      updated_at: iso(created, i % 1000),
      last_answer_at: r() < 0.2 ? '' : iso(created + 60_000),
      hidden_fields: hidden,
      answers: choices.map((v) => ({ t: 0, v_s: v, cta_type: 'single_choice', question_id: CHOICE_Q, question_correlation_id: CHOICE_Q })),
    };
  });
}

// --- the reference aggregator ------------------------------------------------------------------------

const DATE_COLUMN: Record<string, string> = { created_at: 'created_at', ended_at: 'ended_at', last_activity_at: 'last_answer_at' };
const bytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const µs = (s: string) => parseInstantMicros(s)!;

function hiddenText(h: Rec): string {
  return h.t === 0 ? h.v_s : h.t === 1 ? String(h.v_b) : String(h.v_d);
}

function reference(records: Rec[], rules: Rule[], range?: { start?: string; end?: string }) {
  const plans: (HistogramPlan | undefined)[] = rules.map((rule) => {
    if (!DATE_COLUMN[rule.field]) return undefined;
    const values = records.map((r) => r[DATE_COLUMN[rule.field]]).filter((v) => v).map(µs);
    const min = values.length ? values.reduce((a, b) => (b < a ? b : a)) : null;
    const max = values.length ? values.reduce((a, b) => (b > a ? b : a)) : null;
    const start = range?.start ? µs(range.start) : min === null ? null : truncateTo(min, rule.date_histogram_min_interval);
    const end = range?.end ? µs(range.end) : max;
    return start === null || end === null
      ? planHistogram(0n, -1n, rule.date_histogram_min_interval, rule.date_histogram_buckets)
      : planHistogram(start, end, rule.date_histogram_min_interval, rule.date_histogram_buckets);
  });

  const valuesOf = (rule: Rule, plan: HistogramPlan | undefined, rec: Rec): (string | number)[] => {
    switch (rule.field) {
      case 'completion': return [rec.completion];
      case 'survey_id': return [rec.survey_id];
      case 'end_reason': return rec.end_reason ? [rec.end_reason] : [];
      case 'hidden_field': return [...new Set<string>(rec.hidden_fields.filter((h: Rec) => h.key === rule.hidden_field_key).map(hiddenText))];
      case 'answer': return [...new Set<string>(rec.answers.filter((a: Rec) => a.question_correlation_id === rule.question_id).map((a: Rec) => a.v_s))];
      default: {
        const v = rec[DATE_COLUMN[rule.field]];
        const i = v ? bucketIndex(plan!, µs(v)) : null;
        return i === null ? [] : [i];
      }
    }
  };

  const level = (depth: number, recs: Rec[]): any => {
    const rule = rules[depth];
    const plan = plans[depth];
    const groups = new Map<string | number, Rec[]>();
    for (const rec of recs) for (const v of valuesOf(rule, plan, rec)) groups.set(v, [...(groups.get(v) ?? []), rec]);
    const nested = (rs: Rec[]) => (depth + 1 < rules.length ? { aggregations: level(depth + 1, rs) } : {});
    if (plan) {
      return {
        field: rule.field,
        interval: plan.interval,
        buckets: plan.starts.map((s, i) => ({ key: formatMicros(s), doc_count: groups.get(i)?.length ?? 0, ...nested(groups.get(i) ?? []) })),
      };
    }
    if (rule.field === 'completion') for (const c of ['not_started', 'partially_completed', 'fully_completed']) if (!groups.has(c)) groups.set(c, []);
    const entries = [...groups].map(([key, rs]) => ({ key: String(key), rs })).sort((a, b) => b.rs.length - a.rs.length || bytes(a.key, b.key));
    const head: Rec = { field: rule.field };
    if (rule.field === 'hidden_field') head.hidden_field_key = rule.hidden_field_key;
    if (rule.field === 'answer') head.question_id = rule.question_id;
    return {
      ...head,
      buckets: entries.slice(0, 100).map((e) => ({ key: e.key, doc_count: e.rs.length, ...nested(e.rs) })),
      other_doc_count: entries.slice(100).reduce((n, e) => n + e.rs.length, 0),
    };
  };
  return { hits: { total: { value: records.length } }, aggregations: level(0, records) };
}

// --- the suite -----------------------------------------------------------------------------------------

describe('aggregation (HTTP)', () => {
  let svc: TestService;
  let read: string;
  let write: string;
  const surveys = [uuid(), uuid(), uuid()];
  let records: Rec[];
  const OTHER_ORG = '00000000-0000-4000-8000-00000000cafe';

  const aggregate = async (ids: string, body: unknown, token = read) => svc.request('SEARCH', `/1.0/survey/${ids}/response/aggregation`, { token, body });
  const ok = async (ids: string, body: Rec) => {
    const res = await aggregate(ids, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.took).to.be.a('number');
    const { took: _took, ...rest } = res.body;
    return rest;
  };
  const write_ = async (token: string, recs: Rec[]) => {
    for (let i = 0; i < recs.length; i += 1000) {
      const res = await svc.request('POST', '/1.0/survey/response', { token, body: recs.slice(i, i + 1000) });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
    }
  };

  const DAY = { date_histogram_min_interval: 'day', date_histogram_buckets: 10 };
  const SINGLE_RULES: Rule[] = [
    { field: 'created_at', ...DAY },
    { field: 'created_at', date_histogram_min_interval: 'hour', date_histogram_buckets: 100 },
    { field: 'created_at', date_histogram_min_interval: 'month', date_histogram_buckets: 1 },
    { field: 'ended_at', date_histogram_min_interval: 'day', date_histogram_buckets: 7 },
    { field: 'last_activity_at', date_histogram_min_interval: 'month', date_histogram_buckets: 12 },
    { field: 'completion' },
    { field: 'survey_id' },
    { field: 'end_reason' },
    { field: 'hidden_field', hidden_field_key: 'support' },
    { field: 'hidden_field', hidden_field_key: 'logged_in' },
    { field: 'hidden_field', hidden_field_key: 'plan' },
    { field: 'hidden_field', hidden_field_key: 'absent' },
    { field: 'answer', question_id: CHOICE_Q },
  ];

  before(async () => {
    svc = await startTestService();
    read = await svc.token(['responses:read']);
    write = await svc.token(['responses:write']);
    records = makeRecords(600, surveys, 11);
    await write_(write, records);
    // Another organization, same survey ids, other dates: never counted for ours.
    await write_(await svc.token(['responses:write'], OTHER_ORG), makeRecords(80, surveys, 12, Date.UTC(2023, 5, 1), 400));
  });
  after(() => svc.close());

  for (const rule of SINGLE_RULES) {
    it(`one rule alone matches the reference: ${JSON.stringify(rule)}`, async () => {
      expect(await ok('*', { group_by: [rule] })).to.deep.equal(reference(records, [rule]));
    });
  }

  const RANGE = { field: 'created_at', start: '2024-01-10T06:00:00Z', end: '2024-01-31T18:00:00.5Z' };
  const inRange = (r: Rec) => µs(r.created_at) >= µs(RANGE.start) && µs(r.created_at) <= µs(RANGE.end);

  for (const rule of SINGLE_RULES) {
    it(`one rule with a range, buckets aligned to the range start: ${JSON.stringify(rule)}`, async () => {
      const got = await ok('*', { range: RANGE, group_by: [rule] });
      expect(got).to.deep.equal(reference(records.filter(inRange), [rule], RANGE));
      if (rule.date_histogram_min_interval) expect(got.aggregations.buckets[0]?.key).to.equal('2024-01-10T06:00:00.000000Z');
    });
  }

  const COMBOS: Rule[][] = [
    [{ field: 'completion' }, { field: 'created_at', ...DAY }],
    [{ field: 'survey_id' }, { field: 'completion' }, { field: 'created_at', ...DAY }],
    [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 5 }, { field: 'completion' }],
    [{ field: 'answer', question_id: CHOICE_Q }, { field: 'hidden_field', hidden_field_key: 'support' }, { field: 'end_reason' }],
    [{ field: 'end_reason' }, { field: 'ended_at', date_histogram_min_interval: 'hour', date_histogram_buckets: 30 }],
    [{ field: 'hidden_field', hidden_field_key: 'support' }, { field: 'answer', question_id: CHOICE_Q }, { field: 'last_activity_at', date_histogram_min_interval: 'day', date_histogram_buckets: 3 }],
    [{ field: 'answer', question_id: CHOICE_Q }, { field: 'answer', question_id: CHOICE_Q }],
    // A rule repeated below another: the engine merges identical ROLLUP keys unless salted.
    [{ field: 'survey_id' }, { field: 'completion' }, { field: 'survey_id' }],
    [{ field: 'completion' }, { field: 'created_at', ...DAY }, { field: 'completion' }],
  ];
  for (const rules of COMBOS) {
    it(`nested levels match the reference: ${rules.map((r) => r.field).join(' > ')}`, async () => {
      expect(await ok('*', { group_by: rules })).to.deep.equal(reference(records, rules));
      const filtered = { range: RANGE, filters: [{ key: 'language', operator: 'eq', value: 'fr' }], group_by: rules };
      expect(await ok(`${surveys[0]},${surveys[1]}`, filtered)).to.deep.equal(
        reference(records.filter((r) => inRange(r) && r.language === 'fr' && [surveys[0], surveys[1]].includes(r.survey_id)), rules, RANGE),
      );
    });
  }

  it('the decisions.md example shape: completion, then a daily created_at series', async () => {
    const got = await ok('*', { group_by: [{ field: 'completion' }, { field: 'created_at', ...DAY }] });
    expect(got.hits.total.value).to.equal(600);
    expect(got.aggregations.field).to.equal('completion');
    expect(got.aggregations.buckets.map((b: Rec) => b.key)).to.have.members(['fully_completed', 'partially_completed', 'not_started']);
    const notStarted = got.aggregations.buckets.find((b: Rec) => b.key === 'not_started');
    expect(notStarted.doc_count).to.equal(0);
    expect(notStarted.aggregations.buckets).to.have.length(got.aggregations.buckets[0].aggregations.buckets.length).and.not.be.empty;
    expect(notStarted.aggregations.buckets.every((b: Rec) => b.doc_count === 0)).to.equal(true);
    const series = got.aggregations.buckets[0].aggregations;
    expect(series).to.include({ field: 'created_at', interval: '5 day' });
    expect(series.buckets[0].key).to.equal('2024-01-01T00:00:00.000000Z');
    for (const b of series.buckets) expect(b.key).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });

  it('sum of bucket counts = hits.total.value where each response is in exactly one bucket', async () => {
    for (const rule of [{ field: 'created_at', ...DAY }, { field: 'completion' }, { field: 'survey_id' }]) {
      for (const body of [{ group_by: [rule] }, { range: RANGE, group_by: [rule] }]) {
        const got = await ok('*', body);
        const sum = got.aggregations.buckets.reduce((n: number, b: Rec) => n + b.doc_count, 0);
        expect(sum, JSON.stringify(body)).to.equal(got.hits.total.value);
        expect(got.hits.total.value).to.be.greaterThan(0);
      }
    }
  });

  describe('histogram edges', () => {
    const survey = uuid();
    const at = (isoTime: string, extra: Rec = {}) => ({
      ...makeRecords(1, [survey], 3)[0],
      created_at: isoTime,
      updated_at: isoTime,
      active: false,
      end_reason: 'completed',
      ended_at: formatMicros(µs(isoTime) + 3_600_000_000n),
      ...extra,
    });
    before(async () => {
      await write_(write, [
        at('2024-03-01T00:00:00.000000Z'), // exactly the range start
        at('2024-03-01T23:59:59.999999Z'),
        at('2024-03-04T00:00:00.000000Z'),
        at('2024-03-06T00:00:00.000000Z'), // exactly the range end (inclusive)
        at('2024-02-29T23:59:59.999999Z'), // 1 µs before the start: out of scope
        at('2024-03-06T00:00:00.000001Z'), // 1 µs after the end: out of scope
        at('2024-03-02T00:00:00.000000Z', { active: true, end_reason: '', ended_at: '' }),
      ]);
    });
    const range = { start: '2024-03-01T00:00:00Z', end: '2024-03-06T00:00:00Z' };

    it('inclusive end: a response at exactly `end` is in the last bucket; 6 days in 5 buckets -> 2-day steps', async () => {
      const got = await ok(survey, { range, group_by: [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 5 }] });
      expect(got.hits.total.value).to.equal(5);
      expect(got.aggregations).to.deep.equal({
        field: 'created_at',
        interval: '2 day',
        buckets: [
          { key: '2024-03-01T00:00:00.000000Z', doc_count: 3 },
          { key: '2024-03-03T00:00:00.000000Z', doc_count: 1 },
          { key: '2024-03-05T00:00:00.000000Z', doc_count: 1 },
        ],
      });
    });

    it('a range shorter than one min interval -> one bucket; N = 1 -> one bucket', async () => {
      const short = await ok(survey, { range: { start: '2024-03-01T00:00:00Z', end: '2024-03-01T12:00:00Z' }, group_by: [{ field: 'created_at', date_histogram_min_interval: 'month', date_histogram_buckets: 100 }] });
      expect(short.aggregations).to.deep.equal({ field: 'created_at', interval: '1 month', buckets: [{ key: '2024-03-01T00:00:00.000000Z', doc_count: 1 }] });
      const one = await ok(survey, { range, group_by: [{ field: 'created_at', date_histogram_min_interval: 'hour', date_histogram_buckets: 1 }] });
      expect(one.aggregations).to.deep.equal({ field: 'created_at', interval: '121 hour', buckets: [{ key: '2024-03-01T00:00:00.000000Z', doc_count: 5 }] });
    });

    it('without a range the data bounds the series, from the start of the first day; NULL ended_at is in no bucket', async () => {
      const got = await ok(survey, { group_by: [{ field: 'ended_at', date_histogram_min_interval: 'day', date_histogram_buckets: 100 }] });
      const withEnd = (await ok(survey, { group_by: [{ field: 'completion' }] })).hits.total.value - 1;
      expect(got.aggregations.buckets.reduce((n: number, b: Rec) => n + b.doc_count, 0)).to.equal(withEnd);
      expect(got.aggregations.buckets[0].key).to.match(/T00:00:00\.000000Z$/);
    });

    it('no value of the field in scope -> an empty series, still 200', async () => {
      const got = await ok(uuid(), { group_by: [{ field: 'completion' }, { field: 'ended_at', ...DAY }] });
      expect(got.hits.total.value).to.equal(0);
      expect(got.aggregations.buckets.map((b: Rec) => [b.key, b.doc_count, b.aggregations.buckets])).to.deep.equal([
        ['fully_completed', 0, []],
        ['not_started', 0, []],
        ['partially_completed', 0, []],
      ]);
    });
  });

  // Buckets starting inside an hour: no rollup slice fits, the raw table answers, as dense buckets
  // (src/query/dense-buckets.ts) when every level is completion or a created_at hour/day series.
  const INSIDE_HOUR = { start: '2024-01-03T05:17:44.622766Z', end: '2024-02-08T00:17:44.622764Z' };
  const DENSE_COMBOS: Rule[][] = [
    [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 100 }, { field: 'completion' }],
    [{ field: 'completion' }, { field: 'created_at', date_histogram_min_interval: 'hour', date_histogram_buckets: 100 }],
    [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 4 }, { field: 'created_at', date_histogram_min_interval: 'hour', date_histogram_buckets: 30 }, { field: 'completion' }],
    [{ field: 'completion' }],
  ];
  for (const rules of DENSE_COMBOS) {
    it(`a range starting inside an hour (dense buckets) matches the reference: ${rules.map((r) => r.field).join(' > ')}`, async () => {
      const inside = (r: Rec) => µs(r.created_at) >= µs(INSIDE_HOUR.start) && µs(r.created_at) <= µs(INSIDE_HOUR.end);
      expect(await ok('*', { range: INSIDE_HOUR, group_by: rules })).to.deep.equal(reference(records.filter(inside), rules, INSIDE_HOUR));
      const filtered = { range: INSIDE_HOUR, filters: [{ key: 'language', operator: 'eq', value: 'fr' }], group_by: rules };
      expect(await ok(`${surveys[0]},${surveys[2]}`, filtered)).to.deep.equal(
        reference(records.filter((r) => inside(r) && r.language === 'fr' && [surveys[0], surveys[2]].includes(r.survey_id)), rules, INSIDE_HOUR),
      );
    });
  }

  it('property: the dense buckets give the rows of the ranked ROLLUP they replace, column for column', async () => {
    const lo = µs('2023-12-30T00:00:00Z');
    const span = 50n * 86_400_000_000n;
    const ruleArb = fc.oneof(
      fc.constant<GroupByRule>({ kind: 'completion', field: 'completion' }),
      fc.record({ minInterval: fc.constantFrom<MinInterval>('hour', 'day'), buckets: fc.integer({ min: 1, max: 100 }) }).map((r): GroupByRule => ({ kind: 'date', field: 'created_at', ...r })),
    );
    const run = async (q: { sql: string; params: Record<string, unknown> }) =>
      (await svc.client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: PINNED_SETTINGS })).json<Rec>();
    const runner = run as unknown as RunQuery;
    const HOUR = 3_600_000_000n;
    await svc.settle();
    await fc.assert(
      fc.asyncProperty(
        fc.bigInt({ min: 0n, max: span }), fc.bigInt({ min: 0n, max: span }), fc.array(ruleArb, { minLength: 1, maxLength: 3 }), fc.boolean(),
        async (a, b, rules, filtered) => {
          const [from, to] = a <= b ? [lo + a, lo + b] : [lo + b, lo + a];
          const filters = filtered ? [v.parse(filterSchema, { type: 'response', key: 'language', operator: 'neq', value: 'fr' }) as FilterNode] : [];
          const selection = selectionOf(svc.orgId, '*', { filters_bool: 'AND', filters, range: { field: 'created_at', start: formatDbMicros(from), end: formatDbMicros(to) } });
          const plans = planLevels(rules, selection.range, {});
          const dense = compileDenseAggregation(selection, rules, plans);
          const sorted = (rows: Rec[]) => rows.map((r) => JSON.stringify(r)).sort();
          const fits = plans.reduce((n, p, i) => n * (p ? p.starts.length : 3), 1) <= 65_536 && plans.every((p) => !p || p.starts.length > 0);
          if (fits) expect(dense, JSON.stringify(rules)).to.not.equal(undefined);
          if (!dense) return;
          const ranked = sorted(await run(compileAggregation(selection, rules, plans)));
          expect(sorted(dense.rows(await run(dense.query) as never))).to.deep.equal(ranked);
          // Whole hours: the rollup serves the request (dense too, compileDenseRollupAggregation), raw forced or not.
          const hours = { ...selection, range: { start: formatDbMicros(((from + HOUR - 1n) / HOUR) * HOUR), end: formatDbMicros(((to / HOUR) * HOUR) + HOUR - 1n) } };
          const hourPlans = planLevels(rules, hours.range, {});
          const byRollup = await runAggregation(runner, hours, rules, { plans: hourPlans });
          const byRaw = await runAggregation(runner, hours, rules, { plans: hourPlans, rollups: false });
          expect(sorted(byRollup.rows as never)).to.deep.equal(sorted(byRaw.rows as never));
          expect(sorted(byRaw.rows as never)).to.deep.equal(sorted(await run(compileAggregation(hours, rules, hourPlans))));
        },
      ),
      { numRuns: 40 },
    );
  });

  it('the engine bucket expression agrees with histogram.ts on random plans and instants (edges included)', async () => {
    const lo = µs('2000-01-01T00:00:00Z');
    const hi = µs('2040-01-01T00:00:00Z');
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<MinInterval>('hour', 'day', 'month'),
        fc.bigInt({ min: lo, max: hi }),
        fc.bigInt({ min: 0n, max: 1n << 60n }),
        fc.integer({ min: 1, max: 100 }),
        fc.array(fc.bigInt({ min: 0n, max: 1n << 60n }), { maxLength: 20 }),
        async (unit, start, raw, n, extra) => {
          const span = unit === 'hour' ? 500n * 3_600_000_000n : unit === 'day' ? 900n * 86_400_000_000n : 20_000n * 86_400_000_000n;
          const end = start + (raw % span);
          const plan = planHistogram(start, end, unit, n);
          const probes = [start, end, start - 1n, plan.boundary, plan.boundary - 1n, ...plan.starts, ...plan.starts.map((s) => s - 1n), ...extra.map((x) => start + (x % (end - start + 2n)))];
          const bag = new ParamBag();
          const expr = levelKeySql({ kind: 'date', field: 'created_at', minInterval: unit, buckets: n }, plan, bag, 1);
          const list = bag.add(probes.map(formatDbMicros), 'Array(String)');
          const rs = await svc.client.query({
            query: `SELECT ${expr} AS idx FROM (SELECT toDateTime64(arrayJoin(${list}), 6, 'UTC') AS created_at)`,
            query_params: { ...bag.toParams() },
            format: 'JSONEachRow',
          });
          const got = (await rs.json<{ idx: number | null }>()).map((r) => (r.idx === null ? null : Number(r.idx)));
          expect(got).to.deep.equal(probes.map((t) => bucketIndex(plan, t)));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('more than 100 values: the 100 largest (ties by key) and other_doc_count', async () => {
    const survey = uuid();
    const many = makeRecords(260, [survey], 21).map((rec, i) => ({
      ...rec,
      hidden_fields: [{ key: 'ua', t: 0, v_s: `agent-${String(i % 130).padStart(3, '0')}` }, ...(i < 5 ? [{ key: 'ua', t: 0, v_s: 'agent-top' }] : [])],
    }));
    await write_(write, many);
    const rules = [{ field: 'hidden_field', hidden_field_key: 'ua' }, { field: 'completion' }];
    const got = await ok(survey, { group_by: rules });
    expect(got).to.deep.equal(reference(many, rules));
    expect(got.aggregations.buckets).to.have.length(100);
    expect(got.aggregations.buckets[0]).to.include({ key: 'agent-top', doc_count: 5 });
    expect(got.aggregations.buckets[1].key).to.equal('agent-000');
    expect(got.aggregations.other_doc_count).to.equal(31 * 2); // agent-099 .. agent-129 left out
  });

  it("organizations are isolated under '*' and with explicit survey ids", async () => {
    const rules = [{ field: 'survey_id' }, { field: 'created_at', date_histogram_min_interval: 'month', date_histogram_buckets: 100 }];
    const ours = await ok('*', { group_by: rules });
    expect(ours.aggregations.buckets.map((b: Rec) => b.key).sort()).to.include.members(surveys);
    const series = ours.aggregations.buckets.find((b: Rec) => b.key === surveys[0]).aggregations.buckets;
    expect(series[0].key.startsWith('2024-01')).to.equal(true); // the other org's 2023 data does not stretch our series
    const theirs = await aggregate('*', { group_by: [{ field: 'survey_id' }] }, await svc.token(['responses:read'], OTHER_ORG));
    expect(theirs.status).to.equal(200);
    expect(theirs.body.hits.total.value).to.equal(80);
    const stranger = await aggregate(surveys.join(','), { group_by: [{ field: 'completion' }] }, await svc.token(['responses:read'], uuid()));
    expect(stranger.body.hits.total.value).to.equal(0);
  });

  it('invalid rules are 400s naming the rule index; size/offset are ignored', async () => {
    const cases: Array<[unknown, string]> = [
      [[{ field: 'completion' }, { field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 101 }], 'group_by[1].date_histogram_buckets'],
      [[{ field: 'wat' }], 'group_by[0].field'],
      [[{ field: 'hidden_field' }], 'group_by[0].hidden_field_key'],
      [[{ field: 'answer' }], 'group_by[0].question_id'],
      [[{ field: 'completion' }, { field: 'completion' }, { field: 'completion' }, { field: 'completion' }], 'group_by'],
      [[], 'group_by'],
    ];
    for (const [groupBy, path] of cases) {
      const res = await aggregate('*', { group_by: groupBy });
      expect(res.status, path).to.equal(400);
      expect(res.body.error.code).to.equal('validation_error');
      expect(res.body.error.issues.map((i: Rec) => i.path)).to.include(path);
    }
    expect((await aggregate('*', { size: 5, offset: 3, group_by: [{ field: 'completion' }] })).status).to.equal(200);
    expect((await aggregate('*', { group_by: [{ field: 'completion' }] }, write)).status).to.equal(403);
  });

  it('three dense 100-bucket histograms (a million buckets) are a 400 query_too_expensive', async () => {
    const hourly = (field: string) => ({ field, date_histogram_min_interval: 'hour', date_histogram_buckets: 100 });
    const res = await aggregate('*', { group_by: [hourly('created_at'), hourly('ended_at'), hourly('last_activity_at')] });
    expect(res.status).to.equal(400);
    expect(res.body.error.code).to.equal('query_too_expensive');
    expect((await aggregate('*', { group_by: [hourly('created_at'), hourly('ended_at')] })).status).to.equal(200);
  });

  it('property: random group_by gives 200 or 400, never a 500', async () => {
    const rule = fc.oneof(
      fc.record({
        field: fc.constantFrom('created_at', 'ended_at', 'last_activity_at', 'when'),
        date_histogram_min_interval: fc.constantFrom('hour', 'day', 'month', 'week'),
        date_histogram_buckets: fc.oneof(fc.integer({ min: -1, max: 102 }), fc.constant(1.5)),
      }, { requiredKeys: ['field'] }),
      fc.record({
        field: fc.constantFrom('completion', 'survey_id', 'end_reason', 'hidden_field', 'answer'),
        hidden_field_key: fc.oneof(fc.constantFrom('support', 'plan', "o'brien", ''), fc.string()),
        question_id: fc.oneof(fc.constant(CHOICE_Q), fc.string()),
      }, { requiredKeys: ['field'] }),
    );
    const range = fc.option(fc.record({ start: fc.constantFrom('2024-01-05T00:00:00Z', '2023-12-31T23:00:00Z'), end: fc.constantFrom('2024-01-06T00:00:00Z', '2024-02-10T10:10:10.123456Z') }, { requiredKeys: [] }), { nil: undefined });
    await fc.assert(
      fc.asyncProperty(fc.array(rule, { minLength: 0, maxLength: 4 }), range, async (groupBy, r) => {
        const res = await aggregate('*', { group_by: groupBy, ...(r ? { range: r } : {}) });
        expect([200, 400], JSON.stringify({ groupBy, r, body: res.body })).to.include(res.status);
        if (res.status === 200) expect(res.body.hits.total.value).to.be.a('number');
      }),
      { numRuns: 60 },
    );
  });
});
