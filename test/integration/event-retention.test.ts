import { expect } from 'chai';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { insertEvents } from '../../src/events/ingest.ts';
import { encodeEventChunk } from '../../src/events/encode.ts';
import { parseEventBatch } from '../../src/events/schema.ts';
import { ALIASES, NAMES, genHistory, historyBase, readEvents, writeHistory } from './analysis-fixture.ts';
import { refRetention, refStickiness, type Period, type Pred, type RefEvent } from './funnel-reference.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * SEARCH /1.0/event/retention against the reference (funnel-reference.ts): random histories sent
 * through POST /1.0/event over five days (daily periods), and histories of nine months written
 * through the write path's own row builder with their reception time back then (POST /1.0/event
 * keeps only the last 7 days), for weekly and monthly periods; cohorts, splits, and a deleted user.
 * SEARCH /1.0/event/stickiness is checked on the same histories (its start step is the event).
 */
type Rec = Record<string, any>;

interface GenStep {
  body: Rec | 'any';
  pred: Pred | null;
}

const genStep: fc.Arbitrary<GenStep> = fc.oneof(
  fc.constantFrom(...NAMES).map((n) => ({ body: { filters: [{ key: 'event_name', operator: 'eq', value: n }] }, pred: (e: RefEvent) => e.type === 'track' && e.name === n })),
  fc.constant<GenStep>({ body: { filters: [{ key: 'type', operator: 'eq', value: 'page' }] }, pred: (e) => e.type === 'page' }),
  fc.constantFrom(...NAMES).map((n) => ({ body: { filters_bool: 'OR', filters: [{ key: 'event_name', operator: 'eq', value: n }, { key: 'type', operator: 'eq', value: 'page' }] }, pred: (e: RefEvent) => e.type === 'page' || e.name === n })),
);
const genReturn: fc.Arbitrary<GenStep> = fc.oneof(genStep, fc.constant<GenStep>({ body: 'any', pred: null }));

interface GenRetention {
  start: GenStep;
  ret: GenStep;
  periods: number;
  /** Day offsets from the base, inclusive (the end at the day's last millisecond). */
  range?: { start?: number; end?: number };
}

const genRetention = (days: number, maxPeriods: number): fc.Arbitrary<GenRetention> =>
  fc.record({
    start: genStep,
    ret: genReturn,
    periods: fc.integer({ min: 1, max: maxPeriods }),
    range: fc.option(fc.record({ start: fc.option(fc.integer({ min: 0, max: days }), { nil: undefined }), end: fc.option(fc.integer({ min: 0, max: days }), { nil: undefined }) }), { nil: undefined }),
  });

function rangeMs(q: GenRetention, base: number) {
  if (!q.range) return undefined;
  const start = q.range.start === undefined ? undefined : base + q.range.start * 86_400_000;
  const end = q.range.end === undefined ? undefined : base + (q.range.end + 1) * 86_400_000 - 1;
  return start !== undefined && end !== undefined && start > end ? { start: end - 86_400_000 + 1, end } : { start, end };
}

function bodyOf(q: GenRetention, base: number, period: Period): Rec {
  const r = rangeMs(q, base);
  return {
    start: q.start.body,
    return: q.ret.body,
    period,
    periods: q.periods,
    ...(r ? { range: { ...(r.start === undefined ? {} : { start: new Date(r.start).toISOString() }), ...(r.end === undefined ? {} : { end: new Date(r.end).toISOString() }) } } : {}),
  };
}

const expected = (events: RefEvent[], q: GenRetention, base: number, period: Period, users?: Set<string>) =>
  refRetention(events, { start: q.start.pred!, ret: q.ret.pred, period, periods: q.periods, range: rangeMs(q, base), users });

describe('Event retention (HTTP) against the reference', function () {
  this.timeout(600_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc?.close());

  const retention = (token: string, body: unknown) => svc.request('SEARCH', '/1.0/event/retention', { token, body });
  const stickiness = (token: string, body: unknown) => svc.request('SEARCH', '/1.0/event/stickiness', { token, body });

  it('agrees on random histories by day, with a cohort split, before and after a user deletion', async () => {
    await fc.assert(
      fc.asyncProperty(genHistory, fc.array(genRetention(4, 5), { minLength: 3, maxLength: 3 }), fc.constantFrom(...ALIASES), fc.constantFrom(...ALIASES), async ([events, order, batches], queries, member, deleted) => {
        const orgId = randomUUID();
        const [write, read, respond] = [await svc.token(['events'], orgId), await svc.token(['events:read'], orgId), await svc.token(['responses:write'], orgId)];
        const base = historyBase();
        let stored = await writeHistory(svc, write, read, base, events, order, batches);
        // One respondent: the split cohort of the users who answered the survey.
        const survey = randomUUID();
        const t = '2026-01-05T10:00:00.000000Z';
        const response = {
          id: randomUUID(), channel_id: randomUUID(), respondent_id: randomUUID(), survey_id: survey, respondent_aliases: [member], completion: 'fully_completed',
          active: false, end_reason: 'completed', ended_at: t, created_at: t, updated_at: t, answers: [],
        };
        expect((await svc.request('POST', '/1.0/survey/response', { token: respond, body: [response] })).status).to.equal(200);
        const check = async (label: string) => {
          for (const q of queries) {
            const body: Rec = { ...bodyOf(q, base, 'day'), split_by_cohorts: [{ name: 'respondents', cohort: { survey_ids: [survey] } }] };
            const res = await retention(read, body);
            expect(res.status, JSON.stringify(res.body)).to.equal(200);
            expect(res.body.period).to.equal('day');
            expect(res.body.cohorts, `${label} ${JSON.stringify(body)}`).to.deep.equal(expected(stored, q, base, 'day'));
            expect(res.body.split[0].cohorts, `${label} split ${JSON.stringify(body)}`).to.deep.equal(expected(stored, q, base, 'day', new Set([member])));
            const sticky = await stickiness(read, { event: q.start.body, interval: 'day', ...(body.range ? { range: body.range } : {}), split_by_cohorts: body.split_by_cohorts });
            expect(sticky.status, JSON.stringify(sticky.body)).to.equal(200);
            expect(sticky.body.stickiness, `${label} stickiness`).to.deep.equal(refStickiness(stored, { event: q.start.pred!, period: 'day', range: rangeMs(q, base) }));
            expect(sticky.body.split[0].stickiness, `${label} stickiness split`).to.deep.equal(refStickiness(stored, { event: q.start.pred!, period: 'day', range: rangeMs(q, base), users: new Set([member]) }));
          }
        };
        await check('written');
        expect((await svc.request('DELETE', `/1.0/user/${deleted}`, { token: write })).status).to.equal(202);
        stored = stored.filter((e) => e.alias !== deleted);
        await check(`after deleting ${deleted}`);
      }),
      { numRuns: Number(process.env.RETENTION_RUNS ?? 12), seed: Number(process.env.RETENTION_SEED ?? 2425), endOnFailure: true },
    );
  });

  it('agrees on nine months of history (across a new year) by week and by month', async () => {
    const base = Date.UTC(2024, 9, 1);
    const DAYS = 270;
    const genOld = fc.array(
      fc.record({
        alias: fc.option(fc.constantFrom(...ALIASES), { nil: null, freq: 8 }),
        page: fc.boolean(),
        name: fc.constantFrom(...NAMES),
        // Clustered around a few weeks, so that weeks and months both repeat.
        day: fc.oneof(fc.integer({ min: 0, max: DAYS }), fc.constantFrom(0, 6, 7, 13, 30, 31, 58, 59, 60, 89, 90, 180)),
        ms: fc.integer({ min: 0, max: 86_399_999 }),
      }),
      { minLength: 20, maxLength: 120, size: 'max' },
    );
    await fc.assert(
      fc.asyncProperty(genOld, fc.array(genRetention(DAYS, 12), { minLength: 4, maxLength: 4 }), async (old, queries) => {
        const orgId = randomUUID();
        const read = await svc.token(['events:read'], orgId);
        // Each event as received one second after it happened, through the write path's rows.
        const seqOf = new Map<string, number>();
        const chunks = old.map((e, i) => {
          const t = base + e.day * 86_400_000 + e.ms;
          const item = {
            type: e.page ? 'page' : 'track', ...(e.page ? { url: `https://example.com/${e.name}` } : { event_name: e.name }),
            ...(e.alias ? { user_alias: e.alias } : {}), timestamp: new Date(t).toISOString(), message_id: `m-${i}`,
          };
          seqOf.set(item.message_id, 0);
          return encodeEventChunk(orgId, parseEventBatch([item]), new Date(t + 1000)).body;
        });
        await insertEvents(svc.client, chunks);
        const stored = await readEvents(svc, read, seqOf);
        expect(stored).to.have.length(old.length);
        for (const period of ['week', 'month'] as const) {
          for (const q of queries) {
            const body = bodyOf(q, base, period);
            const res = await retention(read, body);
            expect(res.status, JSON.stringify(res.body)).to.equal(200);
            const want = expected(stored, q, base, period);
            expect(res.body.cohorts, `${JSON.stringify(body)} got ${JSON.stringify(res.body.cohorts)} want ${JSON.stringify(want)}`).to.deep.equal(want);
            const sticky = await stickiness(read, { event: q.start.body, interval: period, ...(body.range ? { range: body.range } : {}) });
            expect(sticky.body.stickiness, `stickiness ${JSON.stringify(body)}`).to.deep.equal(refStickiness(stored, { event: q.start.pred!, period, range: rangeMs(q, base) }));
          }
        }
      }),
      { numRuns: Number(process.env.RETENTION_RUNS ?? 12), seed: Number(process.env.RETENTION_SEED ?? 2425), endOnFailure: true },
    );
  });

  it('answers a range ending past 2149 (beyond the engine\'s Date) as one without an end', async () => {
    const orgId = randomUUID();
    const [write, read] = [await svc.token(['events'], orgId), await svc.token(['events:read'], orgId)];
    const base = historyBase();
    const sent = ['u1', 'u2', 'u1'].map((alias, i) => ({ type: 'track', event_name: 'a', user_alias: alias, timestamp: new Date(base + i * 2 * 86_400_000).toISOString() }));
    expect((await svc.request('POST', '/1.0/event', { token: write, body: sent })).status).to.equal(200);
    for (const period of ['day', 'week', 'month']) {
      const body = { start: { filters: [{ key: 'event_name', operator: 'eq', value: 'a' }] }, period, periods: 52 };
      const open = await retention(read, body);
      const far = await retention(read, { ...body, range: { start: '1900-01-01T00:00:00Z', end: '2290-06-30T00:00:00Z' } });
      expect(open.body.cohorts.length, period).to.be.above(0);
      expect(far.body.cohorts, period).to.deep.equal(open.body.cohorts);
    }
  });

  it('answers a 400 naming the problem', async () => {
    const read = await svc.token(['events:read']);
    const start = { filters: [{ key: 'event_name', operator: 'eq', value: 'a' }] };
    const cases: [unknown, string][] = [
      [{ start, periods: 53 }, 'periods'],
      [{ start, periods: 0 }, 'periods'],
      [{ start: { filters: [] } }, 'start.filters'],
      [{}, 'start'],
      [{ start, return: { filters: [] } }, 'return'],
      [{ start, return: 'some' }, 'return'],
      [{ start, period: 'year' }, 'period'],
      [{ start: { filters: [{ key: 'event_name', operator: 'between', value: 'a' }] } }, 'start.filters[0].operator'],
      [{ start, cohort: { answer: { question_id: 'q', operator: 'gte' } } }, 'cohort.answer.value'],
    ];
    const stickyCases: [unknown, string][] = [
      [{ event: { filters: [] } }, 'event.filters'],
      [{}, 'event'],
      [{ event: start, interval: 'hour' }, 'interval'],
    ];
    for (const [body, path] of stickyCases) {
      const res = await stickiness(read, body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.error.issues.map((i: Rec) => i.path), JSON.stringify(body)).to.include(path);
    }
    for (const [body, path] of cases) {
      const res = await retention(read, body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.error.issues.map((i: Rec) => i.path), JSON.stringify(body)).to.include(path);
    }
  });
});
