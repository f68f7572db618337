import { expect } from 'chai';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import * as v from 'valibot';
import type { RunQuery } from '../../src/clickhouse/sql.ts';
import { planComparisons, type CompareSpec } from '../../src/metrics/compare.ts';
import {
  meanDifference, meanInterval, momentsOf, npsDifference, npsInterval, proportionDifference, round, roundInterval, wilsonInterval, type Difference,
} from '../../src/metrics/statistics.ts';
import { bucketIndex, formatMicros, parseInstantMicros, planHistogram, type HistogramPlan } from '../../src/query/histogram.ts';
import { aggregationBodySchema } from '../../src/responses/aggregation.ts';
import { runAggregationRequest, shapeAggregationRequest } from '../../src/responses/aggregation-request.ts';
import { QUERY_SETTINGS, selectionOf } from '../../src/responses/compile.ts';
import type { GroupByRule } from '../../src/responses/group-by.ts';
import { runSearch } from '../../src/responses/search.ts';
import { runSummary, shapeSummary } from '../../src/responses/summary.ts';
import { rebuildOrg } from '../../src/responses/rollups/maintain.ts';
import { loadMigrations } from '../../src/clickhouse/migrations.ts';
import { startTestService, type TestService } from './harness.ts';
import { isoMicros, rng } from './random.ts';

/**
 * Survey metrics per bucket, period comparisons, answer filters and releases on the histograms,
 * against a reference computed here in plain JS over the records written: on random requests the
 * service (rollup-served where it can, and forced onto the raw table) gives the reference's
 * answer. The reference shares only the arithmetic that is unit-tested on its own: the series and
 * the comparison ranges (histogram.ts, metrics/compare.ts) and the interval formulas
 * (metrics/statistics.ts); the counts behind every figure are its own.
 */

type Rec = Record<string, any>;
type Rule = Record<string, any>;

const DAY = 86_400_000;
const BASE = Date.UTC(2024, 2, 1); // main ranges fall in [BASE, BASE + 40 days]
const NPS_Q = randomUUID();
const CSAT_Q = randomUUID();
const CES_Q = randomUUID();
const CHOICE_Q = randomUUID();
const TEXT_Q = randomUUID();
const µs = (s: string) => parseInstantMicros(s)!;

function makeRecords(n: number, surveys: string[], channels: string[], seed: number): Rec[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
  return Array.from({ length: n }, (_, i) => {
    // Most in the main window, some in the 40 days before it and a year before it (the comparisons').
    const zone = r();
    const from = zone < 0.6 ? BASE : zone < 0.8 ? BASE - 40 * DAY : BASE - 366 * DAY;
    const created = from + Math.floor(r() * 40 * DAY);
    const active = r() < 0.2;
    const answers: Rec[] = [];
    const scored = (q: string, cta: string, value: unknown) =>
      answers.push(typeof value === 'number' ? { t: 2, v_d: value, cta_type: cta, question_id: q, question_correlation_id: q } : { t: 0, v_s: value, cta_type: cta, question_id: q, question_correlation_id: q });
    if (r() < 0.8) scored(NPS_Q, 'nps', pick<unknown>([0, 3, 6, 7, 8, 9, 10, 10, 9, '9', 11, 7.5]));
    if (r() < 0.1) scored(NPS_Q, 'nps', pick<unknown>([2, 10])); // a second NPS answer counts too
    if (r() < 0.6) scored(CSAT_Q, 'csat', pick<unknown>([1, 2, 3, 4, 5, 5, 0]));
    if (r() < 0.5) scored(CES_Q, 'ces', pick<unknown>([1, 2, 4, 6, 7, '7']));
    const choices = r() < 0.2 ? [] : r() < 0.3 ? [pick(['a', 'b', 'c']), pick(['a', 'b', 'c'])] : [pick(['a', 'b', 'c', 'Ünï'])];
    for (const c of choices) answers.push({ t: 0, v_s: c, cta_type: 'single_choice', question_id: CHOICE_Q, question_correlation_id: CHOICE_Q });
    if (r() < 0.4) answers.push({ t: 0, v_s: pick(['Slow app', 'fast', 'very SLOW']), cta_type: 'open_question', question_id: TEXT_Q, question_correlation_id: TEXT_Q });
    return {
      id: randomUUID(),
      survey_id: pick(surveys),
      channel_id: pick(channels),
      respondent_id: randomUUID(),
      language: pick(['en', 'fr']),
      completion: pick(['not_started', 'partially_completed', 'fully_completed', 'fully_completed']),
      active,
      end_reason: active ? '' : pick(['closed', 'completed']),
      ended_at: active ? '' : isoMicros(created + 3_600_000),
      created_at: isoMicros(created, i % 1000),
      updated_at: isoMicros(created + 5000),
      last_answer_at: isoMicros(created + 60_000),
      hidden_fields: r() < 0.8 ? [{ key: 'support', t: 0, v_s: pick(['desktop', 'mobile']) }] : [],
      answers,
    };
  });
}

// --- the reference -----------------------------------------------------------------------------------

const SCALE = { nps: [0, 10], csat: [1, 5], ces: [1, 7] } as const;

/** The score of an answer entry (decisions.md): v_d, else v_s read as a number; whole and on the scale, else none. */
function scoreOf(a: Rec, cta: keyof typeof SCALE): number | undefined {
  if (a.cta_type !== cta) return undefined;
  const x = a.v_d !== undefined ? a.v_d : typeof a.v_s === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(a.v_s) ? Number(a.v_s) : undefined;
  return x !== undefined && Number.isInteger(x) && x >= SCALE[cta][0] && x <= SCALE[cta][1] ? x : undefined;
}

/** Integer ratio rounded to 2 decimals, half away from zero (the summary's rule), written apart. */
const ratio2 = (num: number, den: number) => {
  const v = (Math.sign(num) * Math.floor((200 * Math.abs(num) + den) / (2 * den))) / 100;
  return v === 0 ? 0 : v;
};

function countsOf(recs: Rec[]) {
  const scores = { nps: [] as number[], csat: [] as number[], ces: [] as number[] };
  const completion = { not_started: 0, partially_completed: 0, fully_completed: 0 } as Record<string, number>;
  for (const rec of recs) {
    completion[rec.completion]++;
    for (const a of rec.answers) for (const cta of ['nps', 'csat', 'ces'] as const) {
      const s = scoreOf(a, cta);
      if (s !== undefined) scores[cta].push(s);
    }
  }
  return { scores, completion };
}

type Counts = ReturnType<typeof countsOf>;
const change = (main: number | null, mine: number | null, d: Difference | null, decimals: number) => ({
  delta: main === null || mine === null ? null : round(main - mine, decimals),
  delta_ci95: d ? roundInterval(d.ci95, decimals) : null,
  significant: d?.significant ?? false,
});

function refMetrics(names: string[], c: Counts, main?: Counts): Rec {
  const out: Rec = {};
  const nps = (k: Counts) => {
    const d = k.scores.nps.filter((s) => s <= 6).length;
    const p = k.scores.nps.filter((s) => s >= 9).length;
    const total = k.scores.nps.length;
    return { score: total ? ratio2((p - d) * 100, total) : null, detractor: d, neutral: total - d - p, promotor: p, total, ci95: roundInterval(npsInterval({ promotors: p, detractors: d, total }), 2) };
  };
  const moments = (xs: number[]) => momentsOf(xs.map((x) => [x, 1] as const));
  const mean = (k: Counts, cta: 'csat' | 'ces') => {
    const xs = k.scores[cta];
    const sum = xs.reduce((a, b) => a + b, 0);
    return { avg: xs.length ? ratio2(sum, xs.length) : null, n: xs.length, ci95: roundInterval(meanInterval(moments(xs), SCALE[cta][0], SCALE[cta][1]), 2) };
  };
  const completion = (k: Counts) => {
    const all = k.completion.not_started + k.completion.partially_completed + k.completion.fully_completed;
    return { ...k.completion, rate: all ? exactRate(k.completion.fully_completed, all) : null, ci95: roundInterval(wilsonInterval(k.completion.fully_completed, all), 4) };
  };
  const all = (k: Counts) => k.completion.not_started + k.completion.partially_completed + k.completion.fully_completed;
  for (const name of names) {
    if (name === 'nps') {
      const m = nps(c);
      if (!main) out.nps = m;
      else {
        const x = nps(main);
        out.nps = { ...m, ...change(x.score, m.score, npsDifference({ promotors: x.promotor, detractors: x.detractor, total: x.total }, { promotors: m.promotor, detractors: m.detractor, total: m.total }), 2) };
      }
    } else if (name === 'csat' || name === 'ces') {
      const m = mean(c, name);
      out[name] = main ? { ...m, ...change(mean(main, name).avg, m.avg, meanDifference(moments(main.scores[name]), moments(c.scores[name])), 2) } : m;
    } else {
      const m = completion(c);
      out.completion = main
        ? { ...m, ...change(completion(main).rate, m.rate, proportionDifference({ successes: main.completion.fully_completed, n: all(main) }, { successes: c.completion.fully_completed, n: all(c) }), 4) }
        : m;
    }
  }
  return out;
}

function matchesFilter(rec: Rec, f: Rec, channels: string[]): boolean {
  const negated = ['neq', 'not_in', 'not_null', 'not_contains'].includes(f.operator);
  const op = ({ neq: 'eq', not_in: 'in', not_null: 'null', not_contains: 'contains' } as Record<string, string>)[f.operator] ?? f.operator;
  let hit: boolean;
  if (f.type === 'response.answer') {
    const mine = rec.answers.filter((a: Rec) => a.question_correlation_id === f.key);
    const text = (a: Rec) => (a.v_s !== undefined ? a.v_s : String(a.v_d));
    const score = (a: Rec) => (a.v_d !== undefined ? a.v_d : /^\s*-?\d+(\.\d+)?\s*$/.test(a.v_s) ? Number(a.v_s) : undefined);
    if (op === 'null') hit = mine.length === 0;
    else if (op === 'eq') hit = mine.some((a: Rec) => text(a) === String(f.value));
    else if (op === 'in') hit = mine.some((a: Rec) => f.values.map(String).includes(text(a)));
    else if (op === 'contains') hit = mine.some((a: Rec) => text(a).toLowerCase().includes(String(f.value).toLowerCase()));
    else hit = mine.some((a: Rec) => score(a) !== undefined && (op === 'gt' ? score(a) > f.value : score(a) < f.value));
  } else if (f.key === 'completion') hit = rec.completion === f.value;
  else if (f.key === 'language') hit = rec.language === f.value;
  else hit = rec.channel_id === channels[0];
  return negated ? !hit : hit;
}

interface Req {
  surveys: '*' | 0;
  start: number;
  length: number;
  rules: Rule[];
  metrics: string[];
  filters: Rec[];
  or: boolean;
  compare?: 'previous_period' | 'previous_year' | { offset: number; length: number }[];
}

function reference(records: Rec[], req: Req, surveys: string[], channels: string[], releases: Rec[]) {
  const range = { start: BigInt(req.start) * 1000n, end: BigInt(req.start + req.length) * 1000n - 1n };
  const inScope = (rec: Rec, r: { start: bigint; end: bigint }) => {
    if (req.surveys === 0 && rec.survey_id !== surveys[0]) return false;
    const t = µs(rec.created_at);
    if (t < r.start || t > r.end) return false;
    if (req.filters.length === 0) return true;
    const hits = req.filters.map((f) => matchesFilter(rec, f, channels));
    return req.or ? hits.some(Boolean) : hits.every(Boolean);
  };
  const plans = req.rules.map((rule) => (rule.field === 'created_at' ? planHistogram(range.start, range.end, rule.date_histogram_min_interval, rule.date_histogram_buckets) : undefined));
  const valuesOf = (rule: Rule, plan: HistogramPlan | undefined, rec: Rec): (string | number)[] => {
    switch (rule.field) {
      case 'completion': return [rec.completion];
      case 'survey_id': return [rec.survey_id];
      case 'end_reason': return rec.end_reason ? [rec.end_reason] : [];
      case 'hidden_field': return [...new Set<string>(rec.hidden_fields.filter((h: Rec) => h.key === rule.hidden_field_key).map((h: Rec) => h.v_s))];
      case 'answer': return [...new Set<string>(rec.answers.filter((a: Rec) => a.question_correlation_id === rule.question_id).map((a: Rec) => a.v_s))];
      default: {
        const i = bucketIndex(plan!, µs(rec.created_at));
        return i === null ? [] : [i];
      }
    }
  };
  const bytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
  const tree = (recs: Rec[], levelPlans: (HistogramPlan | undefined)[], main?: (path: (string | number)[]) => Counts) => {
    const metricsAt = (rs: Rec[], path: (string | number)[]) => (req.metrics.length ? { metrics: refMetrics(req.metrics, countsOf(rs), main?.(path)) } : {});
    const level = (depth: number, rs: Rec[], path: (string | number)[]): Rec => {
      const rule = req.rules[depth];
      const plan = levelPlans[depth];
      const groups = new Map<string | number, Rec[]>();
      for (const rec of rs) for (const v of valuesOf(rule, plan, rec)) groups.set(v, [...(groups.get(v) ?? []), rec]);
      const nested = (sub: Rec[], key: string | number) => ({ ...metricsAt(sub, [...path, key]), ...(depth + 1 < req.rules.length ? { aggregations: level(depth + 1, sub, [...path, key]) } : {}) });
      if (plan) {
        const marks = releases.filter((r) => µs(r.released_at) >= plan.start && µs(r.released_at) <= plan.end)
          .map((r) => ({ id: r.id, name: r.name, version: r.version, released_at: r.released_at, bucket: formatMicros(plan.starts[bucketIndex(plan, µs(r.released_at))!]) }));
        return {
          field: 'created_at',
          interval: plan.interval,
          buckets: plan.starts.map((s, i) => ({ key: formatMicros(s), doc_count: groups.get(i)?.length ?? 0, ...nested(groups.get(i) ?? [], i) })),
          ...(marks.length ? { releases: marks } : {}),
        };
      }
      if (rule.field === 'completion') for (const c of ['not_started', 'partially_completed', 'fully_completed']) if (!groups.has(c)) groups.set(c, []);
      const entries = [...groups].map(([key, list]) => ({ key: String(key), list })).sort((a, b) => b.list.length - a.list.length || bytes(a.key, b.key));
      const head: Rec = { field: rule.field };
      if (rule.field === 'hidden_field') head.hidden_field_key = rule.hidden_field_key;
      if (rule.field === 'answer') head.question_id = rule.question_id;
      return { ...head, buckets: entries.map((e) => ({ key: e.key, doc_count: e.list.length, ...nested(e.list, e.key) })), other_doc_count: 0 };
    };
    return { hits: { total: { value: recs.length } }, ...metricsAt(recs, []), aggregations: level(0, recs, []) };
  };
  const mainRecs = records.filter((r) => inScope(r, range));
  const expected: Rec = tree(mainRecs, plans);
  if (req.compare) {
    // The main tree's records per bucket path, for the deltas.
    const byPath = (path: (string | number)[]) => {
      let rs = mainRecs;
      path.forEach((key, d) => (rs = rs.filter((rec) => valuesOf(req.rules[d], plans[d], rec).some((v) => String(v) === String(key)))));
      return countsOf(rs);
    };
    const spec: CompareSpec = typeof req.compare === 'string' ? req.compare : req.compare.map((c) => ({ start: range.start - BigInt(c.offset) * 1000n, end: range.start - BigInt(c.offset - c.length) * 1000n - 1n }));
    expected.comparisons = planComparisons(spec, range, plans).map((c) => {
      const shaped = tree(records.filter((r) => inScope(r, c.range)), [...c.plans], byPath);
      return { range: { start: formatMicros(c.range.start), end: formatMicros(c.range.end) }, ...shaped };
    });
  }
  return expected;
}

/** full / all to 4 decimals, half up, in big integers (the service rounds the same way, without float drift). */
function exactRate(full: number, all: number): number {
  return Number((BigInt(full) * 20_000n + BigInt(all)) / (2n * BigInt(all))) / 10_000;
}

// --- random requests ------------------------------------------------------------------------------------

const HOUR = 3_600_000;
const ruleArb = fc.oneof(
  fc.constant({ field: 'completion' }),
  fc.constant({ field: 'survey_id' }),
  fc.constant({ field: 'end_reason' }),
  fc.record({ field: fc.constant('created_at'), date_histogram_min_interval: fc.constantFrom('hour', 'day', 'month'), date_histogram_buckets: fc.constantFrom(1, 3, 7, 40) }),
  fc.constant({ field: 'answer', question_id: CHOICE_Q }),
  fc.constant({ field: 'hidden_field', hidden_field_key: 'support' }),
);
const answerFilterArb = fc.oneof(
  fc.record({ type: fc.constant('response.answer'), key: fc.constant(CHOICE_Q), operator: fc.constantFrom('eq', 'neq'), value: fc.constantFrom('a', 'b', 'Ünï') }),
  fc.record({ type: fc.constant('response.answer'), key: fc.constant(CHOICE_Q), operator: fc.constantFrom('in', 'not_in'), values: fc.constant(['a', 'c']) }),
  fc.record({ type: fc.constant('response.answer'), key: fc.constantFrom(NPS_Q, CSAT_Q), operator: fc.constantFrom('gt', 'lt'), value: fc.constantFrom(2, 6, 8.5) }),
  fc.record({ type: fc.constant('response.answer'), key: fc.constantFrom(NPS_Q, TEXT_Q, randomUUID()), operator: fc.constantFrom('null', 'not_null') }),
  fc.record({ type: fc.constant('response.answer'), key: fc.constant(TEXT_Q), operator: fc.constantFrom('contains', 'not_contains'), value: fc.constant('slow') }),
  fc.record({ type: fc.constant('response.answer'), key: fc.constant(NPS_Q), operator: fc.constant('eq'), value: fc.constantFrom(9, '10') }),
);
const answerEqArb = fc.oneof(
  fc.record({ type: fc.constant('response.answer'), key: fc.constant(CHOICE_Q), operator: fc.constant('eq'), value: fc.constantFrom('a', 'c', 'Ünï') }),
  fc.record({ type: fc.constant('response.answer'), key: fc.constant(NPS_Q), operator: fc.constant('eq'), value: fc.constantFrom(9, '10', 3) }),
);
const dimensionFilterArb = fc.oneof(
  fc.record({ type: fc.constant('response'), key: fc.constant('completion'), operator: fc.constantFrom('eq', 'neq'), value: fc.constant('fully_completed') }),
  fc.record({ type: fc.constant('response'), key: fc.constant('language'), operator: fc.constantFrom('eq', 'neq'), value: fc.constant('fr') }),
);
const requestArb = fc.record({
  surveys: fc.constantFrom<'*' | 0>('*', 0),
  // Whole hours (rollup-served) or not (the ends read the raw table).
  start: fc.tuple(fc.integer({ min: 0, max: 20 * 24 }), fc.constantFrom(0, 0, 1234)).map(([h, ms]) => BASE + h * HOUR + ms),
  length: fc.constantFrom(6 * HOUR, 3 * DAY, 7 * DAY, 19 * DAY + 5 * HOUR),
  rules: fc.uniqueArray(ruleArb, { minLength: 1, maxLength: 2, selector: (r) => r.field }),
  metrics: fc.subarray(['nps', 'csat', 'ces', 'completion'], { minLength: 1 }),
  filters: fc.oneof(
    fc.constant([]),
    fc.array(dimensionFilterArb, { maxLength: 1 }),
    fc.array(answerFilterArb, { minLength: 1, maxLength: 2 }),
    // One answer eq, alone or with a dimension filter: served by the answer groups (schema/110).
    fc.tuple(answerEqArb, fc.array(dimensionFilterArb, { maxLength: 1 })).map(([a, d]) => [a, ...d]),
  ),
  or: fc.boolean(),
  compare: fc.option(fc.oneof(
    fc.constantFrom<'previous_period' | 'previous_year'>('previous_period', 'previous_year'),
    fc.array(fc.record({ offset: fc.constantFrom(2 * DAY, 30 * DAY, 300 * DAY), length: fc.constantFrom(HOUR, 2 * DAY) }), { minLength: 1, maxLength: 3 }),
  ), { nil: undefined }),
})
  // An explicit range longer than the main series is a 400 (compare[i] does not fit: its own test below).
  .filter((req) => !Array.isArray(req.compare) || req.compare.every((c) => c.length <= req.length)) as fc.Arbitrary<Req>;

/** The request body of a Req (what a client sends). */
function bodyOf(req: Req): Rec {
  const start = req.start;
  const end = req.start + req.length;
  return {
    range: { field: 'created_at', start: isoMicros(start), end: `${isoMicros(end - 1).slice(0, 23)}999Z` },
    filters_bool: req.or ? 'OR' : 'AND',
    filters: req.filters,
    group_by: req.rules,
    metrics: req.metrics,
    ...(req.compare === undefined ? {} : {
      compare: typeof req.compare === 'string' ? req.compare : req.compare.map((c) => ({ start: isoMicros(start - c.offset), end: `${isoMicros(start - c.offset + c.length - 1).slice(0, 23)}999Z` })),
    }),
  };
}

describe('survey metrics, comparisons, answer filters and releases: the same answers as a reference over the raw rows', function () {
  this.timeout(600_000);
  let svc: TestService;
  let records: Rec[];
  let releases: Rec[];
  let read: string;
  const surveys = [randomUUID(), randomUUID()];
  const channels = [randomUUID(), randomUUID()];
  let served = 0;
  let totalsServed = 0;
  let periodsServed = 0;
  let queries = 0;
  let lastSql = '';
  const run: RunQuery = async (q) => {
    // The reads of the survey tables (not of the releases).
    if (q.sql.includes('survey_')) queries++;
    if (q.sql.includes('survey_rollup FINAL')) served++;
    if (q.sql.includes('survey_rollup_answers FINAL')) totalsServed++;
    // A read of the pending marks alone (pending.ts runWithPending, when it reads them first): not the read itself.
    if (/survey_rollup FINAL|survey_rollup_answers FINAL|survey_responses/.test(q.sql)) lastSql = q.sql;
    return (await svc.client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: QUERY_SETTINGS })).json();
  };

  before(async () => {
    svc = await startTestService();
    read = await svc.token(['responses:read']);
    records = makeRecords(700, surveys, channels, 20261125);
    const write = await svc.token(['responses:write']);
    const res = await svc.request('POST', '/1.0/survey/response', { token: write, body: records });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const rel = await svc.token(['releases']);
    releases = [];
    for (const [name, at] of [['Spring', '2024-03-04T12:34:56.789Z'], ['Hotfix', '2024-03-09T00:00:00Z'], ['Old', '2023-03-05T08:00:00Z']]) {
      const created = await svc.request('POST', '/1.0/release', { token: rel, body: { name, version: '1.0', released_at: at } });
      expect(created.status).to.equal(201);
      releases.push(created.body);
    }
    await svc.settle();
  });
  after(() => svc.close());

  it('agrees with the reference on random requests, rollup-served and forced onto the raw table', async () => {
    served = 0;
    totalsServed = 0;
    periodsServed = 0;
    await fc.assert(fc.asyncProperty(requestArb, async (req) => {
      const body = v.parse(aggregationBodySchema, bodyOf(req));
      const scope = selectionOf(svc.orgId, req.surveys === 0 ? [surveys[0]] : '*', body);
      const request = { rules: body.group_by as GroupByRule[], metrics: body.metrics, compare: body.compare };
      const expected = reference(records, req, surveys, channels, releases);
      for (const rollups of [true, false]) {
        const [servedBefore, queriesBefore] = [served + totalsServed, queries];
        const rows = await runAggregationRequest(run, scope, request, { rollups });
        // Every period served by the rollups, each in one query, the pending marks beside it (aggregation-periods.ts).
        const periods = rows.comparisons.length + 1;
        if (rollups && request.compare && queries - queriesBefore === periods && served + totalsServed - servedBefore === periods) periodsServed++;
        const { took: _took, ...got } = shapeAggregationRequest(request, rows, 0);
        expect(got, `${rollups ? 'rollups' : 'raw'} ${JSON.stringify(bodyOf(req))}`).to.deep.equal(expected);
      }
      // The summary and the search total of the same scope: the reference's counts, whichever serves them.
      const summary = shapeSummary((await runSummary(run, scope))[0]);
      expect(summary, JSON.stringify(bodyOf(req))).to.deep.equal(shapeSummary((await runSummary(run, scope, { rollups: false }))[0]));
      const nps = expected.metrics.nps;
      if (nps) expect(summary.nps_groups).to.deep.equal({ detractor: nps.detractor, neutral: nps.neutral, promotor: nps.promotor, total: nps.total });
      expect((await runSearch(run, { ...scope, size: 0, offset: 0 })).total).to.equal(expected.hits.total.value);
    }), { numRuns: Number(process.env.METRICS_RUNS ?? 40), seed: Number(process.env.METRICS_SEED ?? 20261125), endOnFailure: true });
    // The comparison means something only if the rollups served a good share of the requests,
    // the answer totals (schema/111) some of them, and some comparisons with their main range,
    // each period in one query (aggregation-periods.ts).
    expect(served).to.be.at.least(15);
    expect(totalsServed).to.be.greaterThan(5);
    expect(periodsServed).to.be.greaterThan(3);
  });

  it('answer totals: an answer a slice no longer holds is not read; slices written without answer totals get them from the upgrade\'s backfill', async () => {
    const range = { field: 'created_at', start: '2024-03-01T00:00:00Z', end: '2024-03-20T00:00:00Z' };
    // A response that answered "a" answers "b" in a newer version. It was the only "a" of its day
    // slice: the slice's new version holds no "a", and its older row of "a" stays in the answer
    // totals (nothing deletes it), which a read must not count.
    const choseA = (r: Rec) => r.answers.some((a: Rec) => a.question_correlation_id === CHOICE_Q && a.v_s === 'a');
    const daySlice = (r: Rec) => `${r.survey_id}/${r.created_at.slice(0, 10)}`;
    const i = records.findIndex((r) =>
      r.created_at >= '2024-03-02' && r.created_at < '2024-03-19' && choseA(r) && r.answers.filter((a: Rec) => a.question_correlation_id === CHOICE_Q).length === 1 &&
      records.filter((o) => daySlice(o) === daySlice(r) && choseA(o)).length === 1);
    expect(i).to.be.at.least(0);
    const updated: Rec = { ...records[i], updated_at: isoMicros(Number(µs(records[i].updated_at) / 1000n) + 60_000), answers: records[i].answers.map((a: Rec) => (a.question_correlation_id === CHOICE_Q ? { ...a, v_s: 'b' } : a)) };
    const write = await svc.token(['responses:write']);
    expect((await svc.request('POST', '/1.0/survey/response', { token: write, body: [updated] })).status).to.equal(200);
    await svc.settle();
    records[i] = updated;
    const stale = await (await svc.client.query({
      query: "SELECT count() AS n FROM survey_rollup_answers FINAL WHERE org_id = {org:UUID} AND question_id = {q:String} AND value = 'a' AND span = 'day' AND survey_id = {s:UUID} AND toDate(start) = {d:Date}",
      query_params: { org: svc.orgId, q: CHOICE_Q, s: updated.survey_id, d: updated.created_at.slice(0, 10) },
      format: 'JSONEachRow',
    })).json<{ n: number }>();
    expect(Number(stale[0].n), 'the old row of "a" is still stored').to.equal(1);
    const check = async (value: string, servedBy: RegExp) => {
      const filters = [{ type: 'response.answer', key: CHOICE_Q, operator: 'eq', value }];
      const body = v.parse(aggregationBodySchema, { filters, range, group_by: [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 19 }], metrics: ['nps', 'completion'] });
      const scope = selectionOf(svc.orgId, '*', body);
      const matching = records.filter((r) => r.created_at >= '2024-03-01' && r.created_at <= '2024-03-20' && matchesFilter(r, filters[0], channels));
      const summary = shapeSummary((await runSummary(run, scope))[0]);
      expect(lastSql, 'summary').to.match(servedBy);
      expect(summary).to.deep.equal(shapeSummary((await runSummary(run, scope, { rollups: false }))[0]));
      expect(summary.completion.fully_completed).to.equal(matching.filter((r) => r.completion === 'fully_completed').length);
      expect((await runSearch(run, { ...scope, size: 0, offset: 0 })).total).to.equal(matching.length);
      const request = { rules: body.group_by as GroupByRule[], metrics: body.metrics };
      const got = shapeAggregationRequest(request, await runAggregationRequest(run, scope, request), 0);
      expect(got).to.deep.equal(shapeAggregationRequest(request, await runAggregationRequest(run, scope, request, { rollups: false }), 0));
      expect(got.hits.total.value).to.equal(matching.length);
    };
    for (const value of ['a', 'b']) await check(value, /survey_rollup_answers FINAL/);
    // Slices written before schema/111 have no answer totals (and no marker): the upgrade's
    // backfill (schema/250) writes them at each slice's current version, and the answers stay exact.
    await svc.client.command({ query: 'DELETE FROM survey_rollup_answers WHERE org_id = {org:UUID}', query_params: { org: svc.orgId } });
    const backfill = loadMigrations().find((m) => m.version === 250)!;
    for (const query of backfill.statements) await svc.client.command({ query, clickhouse_settings: { mutations_sync: '2' } });
    for (const value of ['a', 'b']) await check(value, /survey_rollup_answers FINAL/);
    // Run again, it writes nothing: every slice has its marker.
    const markers = async () => (await (await svc.client.query({ query: "SELECT count() AS n FROM survey_rollup_answers WHERE org_id = {org:UUID} AND question_id = ''", query_params: { org: svc.orgId }, format: 'JSONEachRow' })).json<{ n: string }>())[0].n;
    const before = await markers();
    for (const query of backfill.statements) await svc.client.command({ query });
    expect(await markers()).to.equal(before);
    await rebuildOrg(svc.client, svc.orgId);
    for (const value of ['a', 'b']) await check(value, /survey_rollup_answers FINAL/);
  });

  it('answer-filtered reads over slices written before their answer groups had scores read the raw table; a rebuild serves them again', async () => {
    const filter = { type: 'response.answer', key: CHOICE_Q, operator: 'eq', value: 'a' };
    const body = v.parse(aggregationBodySchema, { filters: [filter], group_by: [{ field: 'completion' }], metrics: ['nps', 'csat', 'completion'], range: { field: 'created_at', start: '2024-03-01T00:00:00Z', end: '2024-03-20T00:00:00Z' } });
    const scope = selectionOf(svc.orgId, '*', body);
    const request = { rules: body.group_by as GroupByRule[], metrics: body.metrics };
    const answer = async (rollups: boolean) => shapeAggregationRequest(request, await runAggregationRequest(run, scope, request, { rollups }), 0);
    const raw = await answer(false);
    const summaryRaw = shapeSummary((await runSummary(run, scope, { rollups: false }))[0]);
    served = 0;
    expect(await answer(true)).to.deep.equal(raw);
    expect(served, 'served by the answer groups').to.be.greaterThan(0);
    // Slice rows as written before schema/110: no score arrays (a newer version of each row without them).
    await svc.client.command({
      query: `INSERT INTO survey_rollup SELECT * REPLACE (now64(9, 'UTC') AS version, [] AS a_support, [] AS a_nps, [] AS a_csat, [] AS a_ces) FROM survey_rollup FINAL WHERE org_id = {org:UUID} AND span = 'day'`,
      query_params: { org: svc.orgId },
    });
    expect(await answer(true), 'the raw table answers').to.deep.equal(raw);
    expect(shapeSummary((await runSummary(run, scope))[0])).to.deep.equal(summaryRaw);
    const total = await runSearch(run, { ...scope, size: 0, offset: 0 });
    expect(total.total).to.equal(raw.hits.total.value);
    await rebuildOrg(svc.client, svc.orgId);
    served = 0;
    expect(await answer(true)).to.deep.equal(raw);
    expect(served).to.be.greaterThan(0);
  });

  it('over HTTP: the route answers the same tree, and the answer filters narrow search and summary alike', async () => {
    const req: Req = { surveys: '*', start: BASE, length: 7 * DAY, rules: [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 7 }], metrics: ['nps', 'csat', 'ces', 'completion'], filters: [], or: false, compare: 'previous_period' };
    const res = await svc.request('SEARCH', '/1.0/survey/*/response/aggregation', { token: read, body: bodyOf(req) });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const { took: _t, ...got } = res.body;
    expect(got).to.deep.equal(reference(records, req, surveys, channels, releases));
    expect(got.aggregations.releases.map((r: Rec) => r.name)).to.deep.equal(['Spring']);
    // Without a range, the series spans the data (a year before BASE to 40 days after it): its releases too.
    const spanned = await svc.request('SEARCH', '/1.0/survey/*/response/aggregation', { token: read, body: { group_by: [{ field: 'created_at', date_histogram_min_interval: 'month', date_histogram_buckets: 20 }] } });
    expect(spanned.body.aggregations.releases.map((r: Rec) => [r.name, r.bucket])).to.deep.equal([['Old', '2023-03-01T00:00:00.000000Z'], ['Spring', '2024-03-01T00:00:00.000000Z'], ['Hotfix', '2024-03-01T00:00:00.000000Z']]);

    const filter = { type: 'response.answer', key: NPS_Q, operator: 'gt', value: 8 };
    const matching = records.filter((r) => matchesFilter(r, filter, channels));
    const search = await svc.request('SEARCH', '/1.0/survey/*/response', { token: read, body: { size: 0, filters: [filter] } });
    expect(search.body.hits.total.value).to.equal(matching.length);
    const summary = await svc.request('SEARCH', '/1.0/survey/*/response/summary', { token: read, body: { filters: [filter] } });
    const nps = countsOf(matching).scores.nps;
    expect(summary.body.nps_groups.total).to.equal(nps.length);
    expect(summary.body.nps_groups.promotor).to.equal(nps.filter((s) => s >= 9).length);
    // The summary of the filtered scope is the aggregation's top-level metrics of the same scope.
    const agg = await svc.request('SEARCH', '/1.0/survey/*/response/aggregation', { token: read, body: { filters: [filter], group_by: [{ field: 'completion' }], metrics: ['nps', 'completion'] } });
    expect(agg.body.metrics.nps.score).to.equal(summary.body.nps_score);
    expect(agg.body.metrics.completion.fully_completed).to.equal(summary.body.completion.fully_completed);
  });

  it('a question id of another organization answers exactly as an unknown one', async () => {
    const other = await startTestService();
    try {
      const foreign = randomUUID();
      const token = await other.token(['responses:write']);
      const theirs = makeRecords(5, [randomUUID()], [randomUUID()], 7).map((r) => ({ ...r, answers: [{ t: 0, v_s: 'a', cta_type: 'single_choice', question_id: foreign, question_correlation_id: foreign }] }));
      expect((await other.request('POST', '/1.0/survey/response', { token, body: theirs })).status).to.equal(200);
      for (const operator of ['eq', 'null', 'not_null']) {
        const body = (key: string) => ({ size: 3, filters: [{ type: 'response.answer', key, operator, ...(operator === 'eq' ? { value: 'a' } : {}) }] });
        const a = await svc.request('SEARCH', '/1.0/survey/*/response', { token: read, body: body(foreign) });
        const b = await svc.request('SEARCH', '/1.0/survey/*/response', { token: read, body: body(randomUUID()) });
        expect(a.status).to.equal(200);
        expect(a.body.hits).to.deep.equal(b.body.hits);
      }
    } finally {
      await other.close();
    }
  });

  it('bad input is a 400 naming it', async () => {
    const bad = async (body: Rec, path: string, text: RegExp) => {
      const res = await svc.request('SEARCH', '/1.0/survey/*/response/aggregation', { token: read, body });
      expect(res.status, JSON.stringify(res.body)).to.equal(400);
      const issue = res.body.error.issues.find((i: Rec) => i.path === path);
      expect(issue, JSON.stringify(res.body)).to.not.equal(undefined);
      expect(issue.message).to.match(text);
    };
    const days = { group_by: [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 7 }] };
    const range = { field: 'created_at', start: '2024-03-01T00:00:00Z', end: '2024-03-07T23:59:59Z' };
    await bad({ ...days, metrics: ['nps', 'happiness'] }, 'metrics[1]', /unknown metric "happiness"/);
    await bad({ ...days, metrics: [] }, 'metrics', /at least one/);
    await bad({ ...days, range, compare: 'last_week' }, 'compare', /previous_period/);
    await bad({ ...days, range, compare: [{ start: '2024-01-01T00:00:00Z', end: '2024-01-09T00:00:00Z' }] }, 'compare[0]', /7 buckets of 1 day/);
    await bad({ ...days, range, compare: [{ start: '2024-01-05T00:00:00Z', end: '2024-01-01T00:00:00Z' }] }, 'compare', /compare\[0\]: start must not be after end/);
    await bad({ ...days, compare: 'previous_period' }, 'range', /start and range.end/);
    await bad({ ...days, range, compare: Array(6).fill({ start: '2024-01-01T00:00:00Z', end: '2024-01-02T00:00:00Z' }) }, 'compare', /at most 5/);
    const filter = (f: Rec) => ({ ...days, filters: [{ type: 'response.answer', key: NPS_Q, ...f }] });
    await bad(filter({ operator: 'before', value: '2024-01-01' }), 'filters[0].operator', /answer filters; they accept eq, neq, in, not_in, gt, lt, null, not_null, contains, not_contains/);
    await bad(filter({ operator: 'gt', value: 'high' }), 'filters[0].value', /a number/);
    await bad(filter({ operator: 'null', value: 1 }), 'filters[0].value', /takes no value/);
    await bad({ ...days, filters: [{ type: 'response.answer', key: '', operator: 'null' }] }, 'filters[0].key', /must not be empty/);
  });
});
