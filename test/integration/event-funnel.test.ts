import { expect } from 'chai';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { ALIASES, NAMES, genHistory, historyBase, writeHistory } from './analysis-fixture.ts';
import { NPS_RANGES, inNpsGroup, refFunnel, refSurveyCohort, scoreOf, valueOf, type Order, type Pred, type RefEvent, type RefResponse, type RefStep } from './funnel-reference.ts';
import { startTestService, type TestService } from './harness.ts';
import { isoMicros } from './random.ts';

/**
 * SEARCH /1.0/event/funnel against the reference (funnel-reference.ts) on random histories written
 * through POST /1.0/event: every order, windows landing on the 10 s grid of the timestamps (so
 * steps exactly at the window's edge are common), equal and out-of-order timestamps, repeated
 * steps, anonymous users, breakdowns, feedback cohorts and splits, and a user deleted with
 * DELETE /1.0/user/<alias> (gone from every answer at once).
 */
type Rec = Record<string, any>;

interface GenStep {
  filters: Rec[];
  pred: Pred;
}

const w = <T>(weight: number, arbitrary: fc.Arbitrary<T>) => ({ weight, arbitrary });
const oneStep: fc.Arbitrary<GenStep> = fc.oneof(
  w(5, fc.constantFrom(...NAMES).map((n) => ({ filters: [{ key: 'event_name', operator: 'eq', value: n }], pred: (e: RefEvent) => e.type === 'track' && e.name === n }))),
  w(2, fc.subarray([...NAMES], { minLength: 2, maxLength: 2 }).map((ns) => ({ filters: [{ key: 'event_name', operator: 'in', values: ns }], pred: (e: RefEvent) => e.type === 'track' && ns.includes(e.name as never) }))),
  w(1, fc.constantFrom(...NAMES).map((n) => ({ filters: [{ key: 'url', operator: 'eq', value: `https://example.com/${n}` }], pred: (e: RefEvent) => e.url === `https://example.com/${n}` }))),
  w(1, fc.constant<GenStep>({ filters: [{ key: 'type', operator: 'eq', value: 'page' }], pred: (e: RefEvent) => e.type === 'page' })),
  w(1, fc.constantFrom(...NAMES).map((n) => ({
    filters: [{ key: 'event_name', operator: 'eq', value: n }, { key: 'property', property_key: 'plan', operator: 'eq', value: 'pro' }],
    pred: (e: RefEvent) => e.type === 'track' && e.name === n && e.props.plan === 'pro',
  }))),
);

type Breakdown = { kind: 'property' } | { kind: 'day' } | undefined;

interface GenQuery {
  steps: GenStep[];
  windowSeconds: number;
  order: Order;
  range?: { start?: number; end?: number };
  breakdown: Breakdown;
}

const genQuery: fc.Arbitrary<GenQuery> = fc.record({
  steps: fc.array(oneStep, { minLength: 2, maxLength: 4 }),
  windowSeconds: fc.constantFrom(10, 10, 20, 20, 30, 40, 2 * 86_400),
  order: fc.constantFrom<Order>('ordered', 'ordered', 'strict', 'any'),
  // Offsets (s) from the history's base: day 0, on its 10 s grid, or none.
  range: fc.option(fc.record({ start: fc.option(fc.integer({ min: 0, max: 6 }).map((x) => x * 10), { nil: undefined }), end: fc.option(fc.integer({ min: 0, max: 6 }).map((x) => x * 10 + 86_400), { nil: undefined }) }), { nil: undefined, freq: 3 }),
  breakdown: fc.constantFrom<Breakdown>(undefined, undefined, { kind: 'property' }, { kind: 'day' }),
});

const planKey = (e: RefEvent): string | null => {
  const p = e.props.plan;
  return p === undefined || p === null ? null : typeof p === 'string' ? p : JSON.stringify(p);
};
const dayKey = (e: RefEvent) => `${new Date(e.t).toISOString().slice(0, 10)}T00:00:00.000000Z`;

function requestOf(q: GenQuery, base: number): Rec {
  return {
    steps: q.steps.map((s) => ({ filters: s.filters })),
    window_seconds: q.windowSeconds,
    order: q.order,
    ...(q.range
      ? { range: { ...(q.range.start === undefined ? {} : { start: new Date(base + q.range.start * 1000).toISOString() }), ...(q.range.end === undefined ? {} : { end: new Date(base + q.range.end * 1000).toISOString() }) } }
      : {}),
    ...(q.breakdown?.kind === 'property' ? { breakdown: { field: 'property', property_key: 'plan' } } : q.breakdown?.kind === 'day' ? { breakdown: { field: 'timestamp', interval: 'day' } } : {}),
  };
}

function expected(events: RefEvent[], q: GenQuery, base: number, users?: Set<string>) {
  return refFunnel(events, {
    steps: q.steps.map((s) => s.pred),
    windowMs: q.windowSeconds * 1000,
    order: q.order,
    range: q.range && { start: q.range.start === undefined ? undefined : base + q.range.start * 1000, end: q.range.end === undefined ? undefined : base + q.range.end * 1000 },
    breakdown: q.breakdown?.kind === 'property' ? planKey : q.breakdown?.kind === 'day' ? dayKey : undefined,
    users,
  });
}

/** The answer's steps (and buckets, as key -> steps) against the reference's. */
function expectSame(answer: Rec, ref: { steps: RefStep[]; buckets?: Map<string | null, RefStep[]> }, what: string) {
  expect(answer.steps, `${what}: steps`).to.deep.equal(ref.steps);
  if (!ref.buckets) return expect(answer.breakdown, what).to.equal(undefined);
  const got = new Map((answer.breakdown.buckets as Rec[]).map((b) => [b.key, b.steps]));
  expect([...got.keys()].sort(), `${what}: bucket keys`).to.deep.equal([...ref.buckets.keys()].sort());
  for (const [key, steps] of ref.buckets) expect(got.get(key), `${what}: bucket ${key}`).to.deep.equal(steps);
}

// --- cohorts -----------------------------------------------------------------------------------

const Q = { nps: randomUUID(), csat: randomUUID(), choice: randomUUID() };
const SURVEYS = [randomUUID(), randomUUID()];

interface GenResponse {
  alias: string;
  survey: number;
  day: number;
  nps?: number | string;
  csat?: number;
  choice?: string;
  completion: string;
}

const genResponse: fc.Arbitrary<GenResponse> = fc.record({
  alias: fc.constantFrom(...ALIASES, 'u7'),
  survey: fc.integer({ min: 0, max: 1 }),
  day: fc.integer({ min: 0, max: 9 }),
  nps: fc.option(fc.constantFrom(0, 6, 7, 8, 9, 10, 3, '9', '3', 7.5, 11), { nil: undefined, freq: 5 }),
  csat: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
  choice: fc.option(fc.constantFrom('admin', 'member', 'Owner'), { nil: undefined }),
  completion: fc.constantFrom('not_started', 'partially_completed', 'fully_completed'),
});

const RESPONSE_BASE = Date.UTC(2026, 0, 10);

function responseRecord(r: GenResponse): { record: Rec; ref: RefResponse } {
  const answers: Rec[] = [];
  if (r.nps !== undefined) answers.push(typeof r.nps === 'number' ? { t: 2, v_d: r.nps, cta_type: 'nps' } : { t: 0, v_s: r.nps, cta_type: 'nps' });
  if (r.csat !== undefined) answers.push({ t: 2, v_d: r.csat, cta_type: 'csat' });
  if (r.choice !== undefined) answers.push({ t: 0, v_s: r.choice, cta_type: 'single_choice' });
  const qid = (a: Rec) => (a.cta_type === 'nps' ? Q.nps : a.cta_type === 'csat' ? Q.csat : Q.choice);
  const full: Rec[] = answers.map((a) => ({ ...a, question_id: qid(a), question_correlation_id: qid(a) }));
  const created = RESPONSE_BASE + r.day * 86_400_000;
  const record = {
    id: randomUUID(), channel_id: randomUUID(), respondent_id: randomUUID(), survey_id: SURVEYS[r.survey],
    respondent_aliases: [randomUUID(), r.alias], language: 'en', completion: r.completion, active: false,
    end_reason: 'completed', ended_at: isoMicros(created + 60_000), created_at: isoMicros(created), updated_at: isoMicros(created + 60_000),
    last_answer_at: isoMicros(created + 30_000), hidden_fields: [], answers: full,
  };
  return { record, ref: { survey_id: SURVEYS[r.survey], respondent_aliases: record.respondent_aliases, created_at: created, completion: r.completion, answers: full as RefResponse['answers'] } };
}

interface GenCohort {
  body: Rec;
  test: (r: RefResponse) => boolean;
}

const genCohort: fc.Arbitrary<GenCohort> = fc
  .tuple(
    fc.oneof(
      fc.constantFrom(...(Object.keys(NPS_RANGES) as (keyof typeof NPS_RANGES)[])).map((g): GenCohort => ({ body: { nps: g }, test: (r) => inNpsGroup(r, g) })),
      fc.tuple(fc.constantFrom('lte', 'gte', 'lt', 'gt'), fc.integer({ min: 1, max: 5 })).map(([op, x]): GenCohort => ({
        body: { answer: { question_id: Q.csat, operator: op, value: x } },
        test: (r) => r.answers.some((a) => {
          const s = a.question_correlation_id === Q.csat ? scoreOf(a) : null;
          return s !== null && (op === 'lte' ? s <= x : op === 'gte' ? s >= x : op === 'lt' ? s < x : s > x);
        }),
      })),
      fc.tuple(fc.constantFrom('eq', 'neq', 'contains'), fc.constantFrom('admin', 'owner', 'mem')).map(([op, x]): GenCohort => {
        const hit = (r: RefResponse) => r.answers.some((a) => a.question_correlation_id === Q.choice && (op === 'contains' ? valueOf(a).toLowerCase().includes(x) : valueOf(a) === x));
        return { body: { answer: { question_id: Q.choice, operator: op, value: x } }, test: (r) => (op === 'neq' ? !hit(r) : hit(r)) };
      }),
      fc.constantFrom('null', 'not_null').map((op): GenCohort => ({
        body: { answer: { question_id: Q.nps, operator: op } },
        test: (r) => r.answers.some((a) => a.question_correlation_id === Q.nps) === (op === 'not_null'),
      })),
      fc.constantFrom('fully_completed', 'not_started').map((c): GenCohort => ({ body: { completion: c }, test: (r) => r.completion === c })),
    ),
    fc.option(fc.integer({ min: 0, max: 1 }), { nil: undefined }),
    fc.option(fc.tuple(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 9 })).map(([a, b]) => [Math.min(a, b), Math.max(a, b)]), { nil: undefined }),
  )
  .map(([c, survey, days]) => ({
    body: {
      ...c.body,
      ...(survey === undefined ? {} : { survey_ids: [SURVEYS[survey]] }),
      ...(days === undefined ? {} : { range: { start: isoMicros(RESPONSE_BASE + days[0] * 86_400_000), end: isoMicros(RESPONSE_BASE + days[1] * 86_400_000) } }),
    },
    test: (r: RefResponse) =>
      c.test(r) &&
      (survey === undefined || r.survey_id === SURVEYS[survey]) &&
      (days === undefined || (r.created_at >= RESPONSE_BASE + days[0] * 86_400_000 && r.created_at <= RESPONSE_BASE + days[1] * 86_400_000)),
  }));

describe('Event funnels (HTTP) against the reference', function () {
  this.timeout(600_000);
  let svc: TestService;

  before(async () => {
    svc = await startTestService();
  });
  after(() => svc?.close());

  const funnel = (token: string, body: unknown) => svc.request('SEARCH', '/1.0/event/funnel', { token, body });

  it('agrees on random histories, funnels, breakdowns, cohorts and splits, before and after a user deletion', async () => {
    await fc.assert(
      fc.asyncProperty(genHistory, fc.array(genQuery, { minLength: 3, maxLength: 3 }), fc.array(genResponse, { maxLength: 10 }), fc.tuple(genCohort, genCohort, genCohort), fc.constantFrom(...ALIASES),
        async ([events, order, batches], queries, gResponses, [cohort, split1, split2], deleted) => {
          const orgId = randomUUID();
          const [write, read, respond] = [await svc.token(['events'], orgId), await svc.token(['events:read'], orgId), await svc.token(['responses:write'], orgId)];
          const base = historyBase();
          let stored = await writeHistory(svc, write, read, base, events, order, batches);
          expect(stored).to.have.length(events.length);
          const responses = gResponses.map(responseRecord);
          if (responses.length) expect((await svc.request('POST', '/1.0/survey/response', { token: respond, body: responses.map((r) => r.record) })).status).to.equal(200);
          const refResponses = responses.map((r) => r.ref);
          const users = (c: GenCohort) => refSurveyCohort(refResponses, c.test);

          const check = async (label: string) => {
            // Cohorts on event search and aggregation: the events, and the distinct users, of the cohort's users.
            for (const c of [cohort, split1, split2]) {
              const members = users(c);
              const mine = stored.filter((e) => e.alias !== null && members.has(e.alias));
              const found = await svc.request('SEARCH', '/1.0/event', { token: read, body: { size: 0, cohort: c.body } });
              expect(found.status, JSON.stringify(found.body)).to.equal(200);
              expect(found.body.hits.total.value, `${label} search ${JSON.stringify(c.body)}`).to.equal(mine.length);
              const agg = await svc.request('SEARCH', '/1.0/event/aggregation', { token: read, body: { cohort: c.body, group_by: [{ field: 'type' }], metrics: ['count', 'unique_users'] } });
              expect(agg.status, JSON.stringify(agg.body)).to.equal(200);
              expect(agg.body.unique_users ?? 0, `${label} aggregation ${JSON.stringify(c.body)}`).to.equal(new Set(mine.map((e) => e.alias)).size);
            }
            for (const q of queries) {
              const body = requestOf(q, base);
              const res = await funnel(read, body);
              expect(res.status, JSON.stringify(res.body)).to.equal(200);
              expectSame(res.body, expected(stored, q, base), `${label} ${JSON.stringify(body)}`);
            }
            // The first query within a cohort, then split by two cohorts.
            const q = queries[0];
            const withCohort = await funnel(read, { ...requestOf(q, base), cohort: cohort.body });
            expect(withCohort.status, JSON.stringify(withCohort.body)).to.equal(200);
            expectSame(withCohort.body, expected(stored, q, base, users(cohort)), `${label} cohort ${JSON.stringify(cohort.body)}`);
            const split = await funnel(read, { ...requestOf(q, base), split_by_cohorts: [{ name: 'one', cohort: split1.body }, { name: 'two', cohort: split2.body }] });
            expect(split.status, JSON.stringify(split.body)).to.equal(200);
            expectSame(split.body, expected(stored, q, base), `${label} split whole`);
            expect(split.body.cohorts.map((c: Rec) => c.name)).to.deep.equal(['one', 'two']);
            expectSame(split.body.cohorts[0], expected(stored, q, base, users(split1)), `${label} split one ${JSON.stringify(split1.body)}`);
            expectSame(split.body.cohorts[1], expected(stored, q, base, users(split2)), `${label} split two ${JSON.stringify(split2.body)}`);
          };
          await check('written');
          const del = await svc.request('DELETE', `/1.0/user/${deleted}`, { token: write });
          expect(del.status).to.equal(202);
          stored = stored.filter((e) => e.alias !== deleted);
          await check(`after deleting ${deleted}`);
        }),
      { numRuns: Number(process.env.FUNNEL_RUNS ?? 15), seed: Number(process.env.FUNNEL_SEED ?? 2424), endOnFailure: true },
    );
  });

  it('chooses the users of random cohorts as the reference does (event search and aggregation)', async () => {
    const members = [...ALIASES, 'u7'];
    await fc.assert(
      fc.asyncProperty(fc.array(genResponse, { minLength: 1, maxLength: 8 }), fc.array(genCohort, { minLength: 3, maxLength: 3 }), async (gResponses, cohorts) => {
        const orgId = randomUUID();
        const [write, read, respond] = [await svc.token(['events'], orgId), await svc.token(['events:read'], orgId), await svc.token(['responses:write'], orgId)];
        const t = new Date(historyBase()).toISOString();
        // Two events per user, and one anonymous event.
        const sent = [...members, ...members, null].map((alias) => ({ type: 'track', event_name: 'a', timestamp: t, ...(alias ? { user_alias: alias } : {}) }));
        expect((await svc.request('POST', '/1.0/event', { token: write, body: sent })).status).to.equal(200);
        const responses = gResponses.map(responseRecord);
        expect((await svc.request('POST', '/1.0/survey/response', { token: respond, body: responses.map((r) => r.record) })).status).to.equal(200);
        for (const c of cohorts) {
          const expectedUsers = [...refSurveyCohort(responses.map((r) => r.ref), c.test)].filter((a) => members.includes(a)).sort();
          const agg = await svc.request('SEARCH', '/1.0/event/aggregation', { token: read, body: { cohort: c.body, group_by: [{ field: 'user_property', property_key: 'none' }], metrics: ['unique_users'] } });
          expect(agg.status, JSON.stringify(agg.body)).to.equal(200);
          expect(agg.body.hits.total.value, JSON.stringify(c.body)).to.equal(2 * expectedUsers.length);
          expect(agg.body.unique_users ?? 0, JSON.stringify(c.body)).to.equal(expectedUsers.length);
          // Counts by event_name: a level the event_hours projection could answer, were it not for the cohort.
          const byName = await svc.request('SEARCH', '/1.0/event/aggregation', { token: read, body: { cohort: c.body, group_by: [{ field: 'event_name' }] } });
          expect(byName.body.hits.total.value, JSON.stringify(c.body)).to.equal(2 * expectedUsers.length);
          const found = await svc.request('SEARCH', '/1.0/event', { token: read, body: { size: 100, cohort: c.body } });
          expect(found.body.hits.total.value, JSON.stringify(c.body)).to.equal(2 * expectedUsers.length);
          expect([...new Set(found.body.hits.events.map((e: Rec) => e.user_alias))].sort(), JSON.stringify(c.body)).to.deep.equal(expectedUsers);
        }
      }),
      { numRuns: Number(process.env.COHORT_RUNS ?? 60), seed: Number(process.env.FUNNEL_SEED ?? 2424), endOnFailure: true },
    );
  });

  it('never matches a cohort through another organization\'s responses or events', async () => {
    const [orgA, orgB] = [randomUUID(), randomUUID()];
    const writeA = await svc.token(['events'], orgA);
    const readA = await svc.token(['events:read'], orgA);
    const respondB = await svc.token(['responses:write'], orgB);
    const writeB = await svc.token(['events'], orgB);
    const t = new Date(historyBase() + 86_400_000).toISOString();
    const sat = (alias: string) => ({ type: 'copilot', event_name: 'service_copilot_satisfaction', user_alias: alias, agent_id: 'agent', conversation_id: 'c', copilot_session_id: 's', rating: '5', rating_scale: '1-5', timestamp: t });
    // Org A: u1 converts; no responses, no ratings. Org B: the same alias is a promoter and rated 5.
    expect((await svc.request('POST', '/1.0/event', { token: writeA, body: [{ type: 'track', event_name: 'a', user_alias: 'u1', timestamp: t }, { type: 'track', event_name: 'b', user_alias: 'u1', timestamp: t }] })).status).to.equal(200);
    expect((await svc.request('POST', '/1.0/event', { token: writeB, body: [sat('u1')] })).status).to.equal(200);
    const promoter = responseRecord({ alias: 'u1', survey: 0, day: 0, nps: 10, completion: 'fully_completed' });
    expect((await svc.request('POST', '/1.0/survey/response', { token: respondB, body: [promoter.record] })).status).to.equal(200);
    const steps = [{ filters: [{ key: 'event_name', operator: 'eq', value: 'a' }] }, { filters: [{ key: 'event_name', operator: 'eq', value: 'b' }] }];
    const whole = await funnel(readA, { steps });
    expect(whole.body.steps.map((s: Rec) => s.users)).to.deep.equal([1, 1]);
    for (const cohort of [{ nps: 'promotor' }, { survey_ids: [SURVEYS[0]] }, { copilot_rating: { operator: 'gte', value: 1 } }]) {
      const res = await funnel(readA, { steps, cohort, split_by_cohorts: [{ name: 'x', cohort }] });
      expect(res.status).to.equal(200);
      expect(res.body.steps.map((s: Rec) => s.users), JSON.stringify(cohort)).to.deep.equal([0, 0]);
      expect(res.body.cohorts[0].steps.map((s: Rec) => s.users), JSON.stringify(cohort)).to.deep.equal([0, 0]);
    }
  });

  it('counts the documented edge cases', async () => {
    const orgId = randomUUID();
    const write = await svc.token(['events'], orgId);
    const read = await svc.token(['events:read'], orgId);
    const base = historyBase() + 86_400_000;
    const at = (s: number) => new Date(base + s * 1000).toISOString();
    const ev = (alias: string | null, name: string, s: number) => ({ type: 'track', event_name: name, ...(alias ? { user_alias: alias } : {}), timestamp: at(s) });
    const sent = [
      // w: b exactly at the window's edge (60 s) converts; x: 1 ms past it does not.
      ev('w', 'a', 0), ev('w', 'b', 60),
      { ...ev('x', 'a', 0) }, { type: 'track', event_name: 'b', user_alias: 'x', timestamp: new Date(base + 60_001).toISOString() },
      // y: a and b in one request with one timestamp: the later item is after (ordered and strict convert).
      ev('y', 'a', 100), ev('y', 'b', 100),
      // z: b before a: only any order converts.
      ev('z', 'b', 200), ev('z', 'a', 210),
      // v: a, c, b: ordered converts, strict does not (c is between).
      ev('v', 'a', 300), ev('v', 'c', 305), ev('v', 'b', 310),
      // anonymous: a user of its own per event, never past step 1.
      ev(null, 'a', 400), ev(null, 'b', 401),
    ];
    expect((await svc.request('POST', '/1.0/event', { token: write, body: sent })).status).to.equal(200);
    const steps = [{ filters: [{ key: 'event_name', operator: 'eq', value: 'a' }] }, { filters: [{ key: 'event_name', operator: 'eq', value: 'b' }] }];
    const users = async (order: string) => (await funnel(read, { steps, order, window_seconds: 60 })).body.steps.map((s: Rec) => s.users);
    expect(await users('ordered')).to.deep.equal([6, 3]); // w, y, v
    expect(await users('strict')).to.deep.equal([6, 2]); // w, y
    expect(await users('any')).to.deep.equal([6, 4]); // w, y, z, v
    const times = (await funnel(read, { steps, window_seconds: 60 })).body.steps[1];
    // w 60 s, y 0 s, v 10 s: median 10, p90 = 10 + 0.8 * 50.
    expect(times).to.include({ median_seconds_from_previous: 10, p90_seconds_from_previous: 50 });
  });

  it('answers a 400 naming the problem, in the one error body', async () => {
    const read = await svc.token(['events:read']);
    const step = { filters: [{ key: 'event_name', operator: 'eq', value: 'a' }] };
    const cases: [unknown, string][] = [
      [{ steps: [step, { filters: [] }] }, 'steps[1].filters'],
      [{ steps: [step, {}] }, 'steps[1].filters'],
      [{ steps: [step] }, 'steps'],
      [{ steps: Array(11).fill(step) }, 'steps'],
      [{ steps: [step, step], window_seconds: 90 * 86_400 + 1 }, 'window_seconds'],
      [{ steps: [step, step], window_seconds: 0 }, 'window_seconds'],
      [{ steps: [step, step], order: 'sometimes' }, 'order'],
      [{ steps: [step, { filters: [{ key: 'colour', operator: 'eq', value: 'a' }] }] }, 'steps[1].filters[0].key'],
      [{ steps: [step, { filters: [{ key: 'event_name', operator: 'gt', value: 'a' }] }] }, 'steps[1].filters[0].operator'],
      [{ steps: [step, { filters: [step.filters[0]], colour: 1 }] }, 'steps[1].colour'],
      [{ steps: [step, step], breakdown: { field: 'property' } }, 'breakdown.property_key'],
      [{ steps: [step, step], breakdown: { field: 'timestamp', interval: 'year' } }, 'breakdown.interval'],
      [{ steps: [step, step], cohort: { nps: 'fan' } }, 'cohort.nps'],
      [{ steps: [step, step], cohort: { answer: { question_id: 'q', operator: 'lte', value: 'x' } } }, 'cohort.answer.value'],
      [{ steps: [step, step], cohort: { copilot_rating: { operator: 'gte', value: 4 }, nps: 'promotor' } }, 'cohort.nps'],
      [{ steps: [step, step], split_by_cohorts: [{ name: 'a', cohort: {} }, { name: 'a', cohort: {} }] }, 'split_by_cohorts'],
      [{ steps: [step, step], split_by_cohorts: Array(11).fill({ name: 'a', cohort: {} }).map((c, i) => ({ ...c, name: `c${i}` })) }, 'split_by_cohorts'],
      [{ steps: [step, step], filters: [] }, 'filters'],
    ];
    for (const [body, path] of cases) {
      const res = await funnel(read, body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.error.code).to.equal('validation_error');
      expect(res.body.error.issues.map((i: Rec) => i.path), JSON.stringify(body)).to.include(path);
    }
    // A missing field is named as such (it read "breakdown must be a JSON object").
    const missing = await funnel(read, { steps: [step, step], breakdown: { field: 'property' } });
    expect(missing.body.error.issues).to.deep.include({ path: 'breakdown.property_key', message: 'property_key is required' });
    const noInterval = await funnel(read, { steps: [step, step], breakdown: { field: 'timestamp' } });
    expect(noInterval.body.error.issues).to.deep.include({ path: 'breakdown.interval', message: 'interval is required' });
    // An empty completion list is named in the service's words (it read "Invalid length: Expected
    // >=1 but received 0"); a value given twice is the same cohort, not a 400 (it read "Expected <=3").
    const noCompletion = await funnel(read, { steps: [step, step], cohort: { completion: [] } });
    expect(noCompletion.body.error.issues).to.deep.equal([{ path: 'cohort.completion', message: 'completion must not be an empty list (leave it out for any completion)' }]);
    const twice = await funnel(read, { steps: [step, step], cohort: { completion: ['fully_completed', 'not_started', 'fully_completed', 'not_started'] } });
    expect(twice.status, JSON.stringify(twice.body)).to.equal(200);
    expect(twice.body.steps).to.deep.equal((await funnel(read, { steps: [step, step], cohort: { completion: ['not_started', 'fully_completed'] } })).body.steps);
  });
});

