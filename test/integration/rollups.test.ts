import { expect } from 'chai';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import type { RunQuery } from '../../src/clickhouse/sql.ts';
import { runAggregation } from '../../src/responses/aggregation.ts';
import { QUERY_SETTINGS, selectionOf, type ResponseSelection } from '../../src/responses/compile.ts';
import { filterSchema, type FilterNode } from '../../src/responses/filters.ts';
import { groupByRuleSchema, type GroupByRule } from '../../src/responses/group-by.ts';
import { rebuildOrg } from '../../src/responses/rollups/maintain.ts';
import { MAX_MARK_ROWS } from '../../src/responses/rollups/pending.ts';
import { runSearch } from '../../src/responses/search.ts';
import { runSummary } from '../../src/responses/summary.ts';
import { seedResponses } from '../../src/seed/responses.ts';
import * as v from 'valibot';
import { startTestService, type TestService } from './harness.ts';

/**
 * The rollups (schema/020, src/responses/rollups/) against the raw table, on the real engine:
 * after random histories of writes through POST /1.0/survey/response (new responses, upserts
 * with later, earlier and equal updated_at, the same id twice in a batch, a changed created_at
 * that the writer keeps as first stored), random summary, aggregation and search requests give the same
 * rows whether served from the rollups or forced onto survey_responses. Ranges end on and around
 * hour, day and month edges, to the microsecond.
 */

type Rec = Record<string, unknown>;

const HOUR = 3_600_000_000n;
const DAY = 24n * HOUR;
const BASE = BigInt(Date.UTC(2024, 2, 10)) * 1000n; // a UTC midnight, µs
/** Instants around the edges of hours, days and months (BASE - 9 days is March 1st, + 52 days May 1st). */
const OFFSETS = [
  -9n * DAY - 1n, -9n * DAY, -1n, 0n, 1n, HOUR - 1n, HOUR, HOUR + 1n, 90n * 60_000_000n, DAY - 1n, DAY, DAY + 1n,
  DAY + 5n * HOUR + 7n, 2n * DAY + HOUR - 1n, 33n * DAY + 2n * HOUR, 52n * DAY - 1n, 52n * DAY,
];
/** µs (after 1970) -> ISO 8601 with microseconds. */
const iso = (us: bigint) => `${new Date(Number(us / 1_000_000n) * 1000).toISOString().slice(0, 19)}.${String(us % 1_000_000n).padStart(6, '0')}Z`;
const db = (isoText: string) => isoText.replace('T', ' ').replace('Z', '');

interface Req {
  surveys: string[] | '*';
  start?: string;
  end?: string;
  filters: unknown[];
  or: boolean;
  rules: unknown[];
}

const Q1 = '00000000-0000-4000-8000-0000000000c1';
const Q2 = '00000000-0000-4000-8000-0000000000c2';
const QUESTION = { nps: '00000000-0000-4000-8000-0000000000a1', csat: '00000000-0000-4000-8000-0000000000a2', ces: '00000000-0000-4000-8000-0000000000a3' } as const;

const recordArb = (surveys: string[], ids: string[], channels: string[]) =>
  fc.record({
    idIndex: fc.nat({ max: ids.length - 1 }),
    created: fc.constantFrom(...OFFSETS),
    updated: fc.nat({ max: 3 }),
    completion: fc.constantFrom('not_started', 'partially_completed', 'fully_completed'),
    active: fc.boolean(),
    endReason: fc.constantFrom('closed', 'completed', 'expired'),
    language: fc.constantFrom('en', 'fr', ''),
    channel: fc.constantFrom(...channels),
    support: fc.subarray(['desktop', 'mobile', 'mobile']),
    nps: fc.option(fc.constantFrom<unknown>(0, 6, 7, 9, 10, '9', 11, 7.5), { nil: undefined }),
    csat: fc.option(fc.constantFrom<unknown>(1, 3, 5, 0), { nil: undefined }),
    ces: fc.option(fc.constantFrom<unknown>(1, 4, 7, '7'), { nil: undefined }),
    choices: fc.subarray(['a', 'b', 'c', 'a']),
    text: fc.option(fc.constantFrom('slow', 'fast'), { nil: undefined }),
  }).map((r): Rec => {
    const answers: Rec[] = [];
    const scored = (cta: keyof typeof QUESTION, value: unknown) => {
      const q = QUESTION[cta];
      answers.push(typeof value === 'number' ? { t: 2, v_d: value, cta_type: cta, question_id: q, question_correlation_id: q } : { t: 0, v_s: value, cta_type: cta, question_id: q, question_correlation_id: q });
    };
    if (r.nps !== undefined) scored('nps', r.nps);
    if (r.csat !== undefined) scored('csat', r.csat);
    if (r.ces !== undefined) scored('ces', r.ces);
    for (const c of r.choices) answers.push({ t: 0, v_s: c, cta_type: 'single_choice', question_id: Q1, question_correlation_id: Q1 });
    if (r.text) answers.push({ t: 0, v_s: r.text, cta_type: 'open_question', question_id: Q2, question_correlation_id: Q2 });
    const created = BASE + r.created;
    return {
      id: ids[r.idIndex],
      survey_id: surveys[r.idIndex % surveys.length],
      channel_id: r.channel,
      respondent_id: ids[r.idIndex],
      language: r.language,
      completion: r.completion,
      active: r.active,
      end_reason: r.active ? '' : r.endReason,
      ended_at: r.active ? '' : iso(created + HOUR),
      created_at: iso(created),
      updated_at: iso(BASE + 40n * DAY + BigInt(r.updated)),
      last_answer_at: iso(created + 1n),
      hidden_fields: r.support.map((s) => ({ key: 'support', t: 0, v_s: s })),
      answers,
    };
  });

const edgeArb = fc.option(fc.tuple(fc.constantFrom(...OFFSETS), fc.constantFrom(-1n, 0n, 1n)).map(([o, d]) => iso(BASE + o + d)), { nil: undefined });

const filterArb = (channels: string[]) =>
  fc.oneof(
    fc.record({ key: fc.constant('completion'), operator: fc.constantFrom('eq', 'neq'), value: fc.constantFrom('fully_completed', 'not_started') }),
    fc.record({ key: fc.constant('language'), operator: fc.constantFrom('eq', 'neq'), value: fc.constantFrom('en', 'fr') }),
    fc.record({ key: fc.constant('language'), operator: fc.constantFrom('null', 'not_null') }),
    fc.record({ key: fc.constant('channel_id'), operator: fc.constantFrom('eq', 'neq'), value: fc.constantFrom(...channels) }),
    // Not rollup-served: the whole request reads the raw table.
    fc.record({ key: fc.constant('raw'), operator: fc.constant('contains'), value: fc.constant('slow') }),
  );

const ruleArb = fc.oneof(
  fc.constant({ field: 'completion' }),
  fc.constant({ field: 'survey_id' }),
  fc.constant({ field: 'end_reason' }),
  fc.record({ field: fc.constant('created_at'), date_histogram_min_interval: fc.constantFrom('hour', 'day', 'month'), date_histogram_buckets: fc.constantFrom(1, 2, 3, 24, 100) }),
  fc.constant({ field: 'answer', question_id: Q1 }),
  fc.constant({ field: 'answer', question_id: Q2 }),
  fc.constant({ field: 'hidden_field', hidden_field_key: 'support' }),
  fc.record({ field: fc.constant('ended_at'), date_histogram_min_interval: fc.constant('day'), date_histogram_buckets: fc.constant(5) }),
);

const requestArb = (surveys: string[], channels: string[]): fc.Arbitrary<Req> =>
  fc.record({
    surveys: fc.constantFrom<string[] | '*'>('*', [surveys[0]]),
    start: edgeArb,
    end: edgeArb,
    filters: fc.array(filterArb(channels), { maxLength: 2 }),
    or: fc.boolean(),
    // Any rule may come twice (survey_id > completion > survey_id): each level is its own key.
    rules: fc.array(ruleArb, { minLength: 1, maxLength: 3 }),
  });

describe('rollups: the same answers as the raw table (property tests, real engine)', function () {
  // Generous: the CI machine has run this suite up to ~14x slower than a quiet 2-core one.
  this.timeout(600_000);
  let svc: TestService;
  let served = 0;
  let queries = 0;
  const run: RunQuery = async (q) => {
    queries++;
    if (q.sql.includes('survey_rollup FINAL')) served++;
    const rs = await svc.client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: QUERY_SETTINGS });
    return rs.json();
  };

  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.close());

  function scopeFor(orgId: string, req: Req): ResponseSelection {
    const filters = req.filters.map((f) => v.parse(filterSchema, f) as FilterNode);
    const range = req.start === undefined && req.end === undefined ? undefined : { start: req.start, end: req.end };
    // A start after the end is a 400 before any query: swap them.
    if (range?.start && range.end && range.start > range.end) [range.start, range.end] = [range.end, range.start];
    const dbRange = range && { field: 'created_at' as const, start: range.start && db(range.start), end: range.end && db(range.end) };
    return selectionOf(orgId, req.surveys, { filters_bool: req.or ? 'OR' : 'AND', filters, range: dbRange });
  }

  async function expectSameAnswers(orgId: string, requests: Req[]) {
    for (const req of requests) {
      const scope = scopeFor(orgId, req);
      const summary = await runSummary(run, scope);
      const rawSummary = await runSummary(run, scope, { rollups: false });
      expect(summary, `summary ${JSON.stringify(req)}`).to.deep.equal(rawSummary);
      const rules = req.rules.map((r) => v.parse(groupByRuleSchema, r) as GroupByRule);
      const byRollup = await runAggregation(run, scope, rules);
      const byRaw = await runAggregation(run, scope, rules, { rollups: false });
      const sorted = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).sort();
      expect(sorted(byRollup.rows), `aggregation ${JSON.stringify(req)}`).to.deep.equal(sorted(byRaw.rows));
      // Search: the total from the rollups, the page from the windows before the range end.
      for (const page of [{ size: 3, offset: 0 }, { size: 2, offset: 3 }, { size: 0, offset: 0 }]) {
        const bySearchRollup = await runSearch(run, { ...scope, ...page });
        const bySearchRaw = await runSearch(run, { ...scope, ...page }, { rollups: false });
        expect(bySearchRollup, `search ${JSON.stringify({ ...req, ...page })}`).to.deep.equal(bySearchRaw);
      }
    }
  }

  it('after random histories of API writes, every random summary, aggregation and search matches the raw table', async () => {
    served = 0;
    const surveys = [randomUUID(), randomUUID()];
    const channels = [randomUUID(), randomUUID()];
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(recordArb(surveys, Array.from({ length: 8 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`), channels), { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 4 }),
        fc.array(requestArb(surveys, channels), { minLength: 4, maxLength: 4 }),
        async (batches, requests) => {
          const orgId = randomUUID();
          const token = await svc.token(['responses:write'], orgId);
          for (const batch of batches) {
            const res = await svc.request('POST', '/1.0/survey/response', { token, body: batch });
            expect(res.status, JSON.stringify(res.body)).to.equal(200);
            // Read-your-writes: after each acknowledged batch, while its recompute is queued or
            // running (its hours are marked pending), not only at the end.
            await expectSameAnswers(orgId, requests.slice(0, 1));
          }
          // And once the recomputes are done: the rollups serve.
          await svc.settle();
          const marks = await svc.client.query({ query: 'SELECT sum(pending) AS p FROM survey_rollup_pending WHERE org_id = {org:UUID}', query_params: { org: orgId }, format: 'JSONEachRow' });
          expect(Number((await marks.json<{ p: string }>())[0].p), 'every mark taken back').to.equal(0);
          await expectSameAnswers(orgId, requests);
        },
      ),
      { numRuns: Number(process.env.ROLLUPS_RUNS ?? 12), seed: Number(process.env.ROLLUPS_SEED ?? 2), endOnFailure: true },
    );
    // The comparison means something only if the rollups served a good share of the requests.
    expect(served).to.be.greaterThan(25);
  });

  it('a rollup that cannot be trusted is never served: a pending slice is read from the raw table; rebuild repairs', async () => {
    const orgId = randomUUID();
    const survey = randomUUID();
    const channel = randomUUID();
    const token = await svc.token(['responses:write'], orgId);
    const records = Array.from({ length: 6 }, (_, i) => ({
      id: randomUUID(), survey_id: survey, channel_id: channel, respondent_id: randomUUID(), language: 'en',
      completion: 'fully_completed', active: false, end_reason: 'completed', ended_at: iso(BASE + 2n * HOUR),
      created_at: iso(BASE + BigInt(i) * HOUR + 5n), updated_at: iso(BASE + 3n * DAY), last_answer_at: '', hidden_fields: [], answers: [],
    }));
    expect((await svc.request('POST', '/1.0/survey/response', { token, body: records })).status).to.equal(200);
    await svc.settle();
    const scope = selectionOf(orgId, '*', { filters_bool: 'AND', filters: [], range: undefined });
    const completion = async (rollups: boolean) => Object.fromEntries(Object.entries((await runSummary(run, scope, { rollups }))[0].completion_counts).map(([k, n]) => [k, Number(n)]));
    expect(await completion(true)).to.deep.equal({ fully_completed: 6 });

    // Corrupt the slices of the first response (its hour, day and month) behind the maintenance's
    // back (a newer version claiming 100 responses; every response is in one group): the month
    // row is what the summary reads...
    const corrupt = `INSERT INTO survey_rollup (org_id, span, survey_id, start, version, g_channel_id, g_completion, g_end_reason, g_language, g_support, g_responses, g_nps, g_csat, g_ces)
      SELECT org_id, span, survey_id, start, now64(9, 'UTC'), g_channel_id, g_completion, g_end_reason, g_language, g_support, [100], g_nps, g_csat, g_ces
      FROM survey_rollup FINAL WHERE org_id = {org:UUID} AND start IN ({start:DateTime64(6, 'UTC')}, {month:DateTime64(6, 'UTC')})`;
    await svc.client.command({ query: corrupt, query_params: { org: orgId, start: db(iso(BASE)), month: db(iso(BASE - 9n * DAY)) } });
    expect(await completion(true)).to.deep.equal({ fully_completed: 100 });
    // ...until the hour is marked pending (as an interrupted write leaves it): then the raw table
    // answers that hour, the other hours of its day come from their hour rows, and the other days
    // of its month from their day rows. (The read carries the set beside it, and runs again
    // compiled with that set when it names a slice the read served: rollups/pending.ts runWithPending.)
    await svc.client.insert({ table: 'survey_rollup_pending', values: [{ org_id: orgId, survey_id: survey, hour: db(iso(BASE)), pending: 1 }], format: 'JSONEachRow' });
    queries = 0;
    expect(await completion(true)).to.deep.equal({ fully_completed: 6 });
    expect(queries, 'the read with the marks beside it, then the read compiled with them').to.equal(2);
    expect(await completion(false)).to.deep.equal({ fully_completed: 6 });

    // Recovery: the rebuild recomputes every slice and clears the marks; the rollup serves again.
    await rebuildOrg(svc.client, orgId);
    const pending = await svc.client.query({ query: 'SELECT sum(pending) AS p FROM survey_rollup_pending WHERE org_id = {org:UUID}', query_params: { org: orgId }, format: 'JSONEachRow' });
    expect(Number((await pending.json<{ p: string }>())[0].p)).to.equal(0);
    served = 0;
    queries = 0;
    expect(await completion(true)).to.deep.equal({ fully_completed: 6 });
    // Nothing pending: one query, the marks beside the read (its guess still names the hour seen
    // pending: read raw, exact).
    expect([served, queries]).to.deep.equal([1, 1]);
    served = 0;
    queries = 0;
    expect(await completion(true)).to.deep.equal({ fully_completed: 6 });
    // Every read checks the marks again, beside it: one query.
    expect([served, queries]).to.deep.equal([1, 1]);

    // Marked and taken back behind this process's back: each read answers exactly with the set
    // of its own moment, in one query (the guess names the hour seen pending lately).
    const mark = (pending: number) => svc.client.insert({ table: 'survey_rollup_pending', values: [{ org_id: orgId, survey_id: survey, hour: db(iso(BASE)), pending }], format: 'JSONEachRow' });
    await mark(1);
    expect(await completion(true)).to.deep.equal({ fully_completed: 6 });
    await mark(-1);
    served = 0;
    queries = 0;
    expect(await completion(true)).to.deep.equal({ fully_completed: 6 });
    expect([served, queries]).to.deep.equal([1, 1]);
  });

  it('a survey whose only response was deleted is no bucket: the rollup answers as the rows do', async () => {
    const orgId = randomUUID();
    const [emptied, kept] = [randomUUID(), randomUUID()];
    const token = await svc.token(['responses:write', 'responses:read'], orgId);
    const record = (id: string, survey: string, created: bigint) => ({
      id, survey_id: survey, channel_id: randomUUID(), respondent_id: id, language: 'en', completion: 'fully_completed', active: false,
      end_reason: 'completed', ended_at: iso(created + HOUR), created_at: iso(created), updated_at: iso(created + HOUR), last_answer_at: '', hidden_fields: [], answers: [],
    });
    const gone = randomUUID();
    expect((await svc.request('POST', '/1.0/survey/response', { token, body: [record(gone, emptied, BASE + 2n * HOUR), record(randomUUID(), kept, BASE + 3n * HOUR)] })).status).to.equal(200);
    await svc.settle();
    // Its hour, day and month slices are recomputed empty: rows that count 0.
    expect((await svc.request('DELETE', `/1.0/survey/response/${gone}`, { token })).body).to.deep.equal({ deleted: 1 });
    await svc.settle();
    const req: Req = { surveys: '*', start: iso(BASE), end: iso(BASE + 5n * DAY), filters: [], or: false, rules: [{ field: 'survey_id' }] };
    served = 0;
    await expectSameAnswers(orgId, [req, { ...req, rules: [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 5 }, { field: 'survey_id' }] }]);
    expect(served, 'answered from the slices').to.be.greaterThan(0);
    const res = await svc.request('SEARCH', '/1.0/survey/*/response/aggregation', { token, body: { range: { field: 'created_at', start: iso(BASE), end: iso(BASE + 5n * DAY) }, group_by: [{ field: 'survey_id' }] } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect((res.body as { aggregations: { buckets: unknown[] } }).aggregations.buckets).to.deep.equal([{ key: kept, doc_count: 1 }]);
  });

  it('tallyhouse seed keeps the rollups exact (INSERT ... SELECT inside the engine)', async () => {
    const orgId = randomUUID();
    await seedResponses(svc.client, { orgId, responses: 3000, surveys: 2, days: 3, now: new Date(Date.UTC(2024, 4, 2, 13, 30, 0, 123)) });
    const days = (n: number) => iso(BigInt(Date.UTC(2024, 3, 29 + n)) * 1000n);
    served = 0;
    await expectSameAnswers(orgId, [
      { surveys: '*', filters: [], or: false, rules: [{ field: 'completion' }, { field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 100 }] },
      { surveys: '*', start: days(1), end: iso(BigInt(Date.UTC(2024, 4, 2, 7, 15)) * 1000n), filters: [{ key: 'language', operator: 'eq', value: 'en' }], or: false, rules: [{ field: 'end_reason' }, { field: 'survey_id' }] },
    ]);
    // Each request: its summary, its aggregation and its three searches, all from the rollups.
    expect(served).to.equal(10);
  });

  it('one answer level alone (the answer buckets of a question): more values than a level keeps, repeats, no answer, upserts, a pending hour: the rows of the raw table', async () => {
    // Served by its own grouping (aggregation.ts oneAnswerLevelSql: no ROLLUP, the buckets cut by
    // LIMIT BY, other_doc_count computed after the read): its rows must be the raw table's.
    const orgId = randomUUID();
    const survey = randomUUID();
    const channel = randomUUID();
    const token = await svc.token(['responses:write'], orgId);
    // 130 values with skewed counts (ties too), 1-3 values a response (one repeated at times),
    // every fifth response without the question; spread over 40 hours from BASE - 3 h.
    const valueOf = (i: number, k: number) => `v${String(((i * 7 + k * 13) % 130) % (k === 0 ? 130 : 40)).padStart(3, '0')}`;
    const record = (i: number, version: number) => {
      const created = BASE - 3n * HOUR + BigInt(i % 40) * HOUR + BigInt(i) * 1000n;
      const values = i % 5 === 0 ? [] : Array.from({ length: 1 + ((i + version) % 3) }, (_, k) => valueOf(i + version, k));
      if (i % 11 === 0 && values.length) values.push(values[0]);
      return {
        id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, survey_id: survey, channel_id: channel, respondent_id: randomUUID(), language: 'en',
        completion: 'fully_completed', active: false, end_reason: 'completed', ended_at: iso(created + HOUR),
        created_at: iso(created), updated_at: iso(BASE + 3n * DAY + BigInt(version)), last_answer_at: '', hidden_fields: [],
        answers: values.map((value) => ({ t: 0, v_s: value, cta_type: 'single_choice', question_id: Q1, question_correlation_id: Q1 })),
      };
    };
    const first = Array.from({ length: 400 }, (_, i) => record(i, 0));
    expect((await svc.request('POST', '/1.0/survey/response', { token, body: first })).status).to.equal(200);
    // Upserts: other values for a third of them.
    const upserts = first.filter((_, i) => i % 3 === 0).map((_, j) => record(j * 3, 1));
    expect((await svc.request('POST', '/1.0/survey/response', { token, body: upserts })).status).to.equal(200);
    await svc.settle();

    const rules = [v.parse(groupByRuleSchema, { field: 'answer', question_id: Q1 }) as GroupByRule];
    const ranges: (undefined | { start: string; end: string })[] = [
      undefined,
      { start: iso(BASE - 2n * HOUR + 17n), end: iso(BASE + 30n * HOUR + 5n) }, // partial hours at both ends
      { start: iso(BASE - 9n * DAY), end: iso(BASE + 2n * DAY) }, // whole days and hours
      { start: iso(BASE + 50n * DAY), end: iso(BASE + 51n * DAY) }, // nothing in range
    ];
    const check = async (label: string) => {
      for (const range of ranges) {
        const scope = selectionOf(orgId, [survey], { filters_bool: 'AND', filters: [], range: range && { field: 'created_at', start: db(range.start), end: db(range.end) } });
        served = 0;
        const byRollup = await runAggregation(run, scope, rules);
        expect(served, `${label}: served from the slices`).to.be.greaterThan(0);
        const byRaw = await runAggregation(run, scope, rules, { rollups: false });
        const sorted = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).sort();
        expect(sorted(byRollup.rows), `${label} ${JSON.stringify(range)}`).to.deep.equal(sorted(byRaw.rows));
        if (range === undefined) {
          // More values than a level keeps: 100 buckets, the rest in other_doc_count.
          expect(byRollup.rows.filter((r) => Number(r.depth) === 1)).to.have.length(100);
          expect(Number(byRollup.rows.find((r) => Number(r.depth) === 1)!.other_doc_count)).to.be.greaterThan(0);
        }
      }
    };
    await check('settled');
    // An hour marked pending (as a write in flight leaves it): that hour from the rows.
    await svc.client.insert({ table: 'survey_rollup_pending', values: [{ org_id: orgId, survey_id: survey, hour: db(iso(BASE + 2n * HOUR)), pending: 1 }], format: 'JSONEachRow' });
    await check('pending hour');
    // More mark rows than the read's UNION ALL carries (rollups/pending.ts MAX_MARK_ROWS: rows of
    // marks not merged yet, here +1 and -1 of many other hours): the set is read first, on its
    // own, summed by the engine; the answers stay the raw table's.
    const hours = Array.from({ length: MAX_MARK_ROWS / 2 }, (_, i) => db(iso(BASE + 60n * DAY + BigInt(i) * HOUR)));
    // No merge may sum them away meanwhile.
    await svc.client.command({ query: 'SYSTEM STOP MERGES survey_rollup_pending' });
    try {
      for (const pending of [1, -1]) {
        await svc.client.insert({ table: 'survey_rollup_pending', values: hours.map((hour) => ({ org_id: orgId, survey_id: survey, hour, pending })), format: 'JSONEachRow', clickhouse_settings: { insert_deduplicate: 0 } });
      }
      queries = 0;
      await check('many mark rows');
      expect(queries, 'each rollup read: the marks in the UNION ALL, then the set on its own, then the read').to.be.greaterThan(3 * ranges.length);
    } finally {
      await svc.client.command({ query: 'SYSTEM START MERGES survey_rollup_pending' });
    }
  });

  it('slice rows stored before schema/050 (no totals in their parts) answer the same: the totals are computed from their arrays when read', async () => {
    const orgId = randomUUID();
    await seedResponses(svc.client, { orgId, responses: 2000, surveys: 2, days: 3, now: new Date(Date.UTC(2024, 4, 2, 13, 30, 0, 123)) });
    // Drop the stored totals from every part, as a part written before the migration lacks them.
    const totals = ['t_rows', 't_completion', 't_end_reason', 't_language', 't_support', 't_nps', 't_csat', 't_ces', 'q_question_id', 'q_value', 'q_responses'];
    await svc.client.command({ query: `ALTER TABLE survey_rollup ${totals.map((c) => `CLEAR COLUMN ${c}`).join(', ')}`, clickhouse_settings: { mutations_sync: '2' } });
    const stored = await svc.client.query({
      // A part that stores a column lists it here (compact parts too, with 0 bytes of their own).
      query: "SELECT count() AS n FROM system.parts_columns WHERE database = currentDatabase() AND table = 'survey_rollup' AND active AND column = 't_rows'",
      format: 'JSONEachRow',
    });
    expect(Number((await stored.json<{ n: string }>())[0].n), 'no part stores t_rows any more').to.equal(0);
    const [sample] = await (await svc.client.query({ query: 'SELECT sum(t_rows) AS n FROM survey_rollup FINAL WHERE org_id = {org:UUID} AND span = \'month\'', query_params: { org: orgId }, format: 'JSONEachRow' })).json<{ n: string }>();
    expect(Number(sample.n), 'computed from the arrays when read').to.equal(2000);
    served = 0;
    const question = (await (await svc.client.query({ query: 'SELECT any(ans_question_ids[1]) AS q FROM survey_responses WHERE org_id = {org:UUID} AND notEmpty(ans_question_ids)', query_params: { org: orgId }, format: 'JSONEachRow' })).json<{ q: string }>())[0].q;
    // No filter: the summary, the single-dimension levels and the answer level read the totals.
    await expectSameAnswers(orgId, [
      { surveys: '*', filters: [], or: false, rules: [{ field: 'completion' }, { field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 100 }] },
      { surveys: '*', filters: [], or: false, rules: [{ field: 'answer', question_id: question }, { field: 'survey_id' }] },
    ]);
    expect(served).to.equal(10);
  });
});
