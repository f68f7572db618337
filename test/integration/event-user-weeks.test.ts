import { expect } from 'chai';
import fc from 'fast-check';
import type { RunQuery } from '../../src/clickhouse/sql.ts';
import { queryRows } from '../../src/clickhouse/result-cache.ts';
import { formatDb, fromMillis } from '../../src/time/iso.ts';
import { runEventAggregation, type EventGroupByRule } from '../../src/events/read/aggregation.ts';
import type { EventSelection } from '../../src/events/read/source.ts';
import { READ_SETTINGS } from '../../src/query/settings.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * Unique users per date bucket from the weeks (src/events/read/user-weeks.ts: the
 * event_user_weeks projection for whole hours, the rows for the partial ones, anonymous events
 * from the counts) against uniqExact over the rows, on random ranges at millisecond precision and
 * random intervals; events on hour and week edges, anonymous events, users active in several
 * buckets; and after a user deletion, which must leave the weeks in the same instant as the rows.
 */
const HOUR = 3_600_000;
const WEEK = 168 * HOUR;
const now = Date.now();
// Events may be up to 7 days old: they spread over the last 6.5 days, across a week edge (weeks
// count from the epoch), some on exact hour starts and on the week edge itself.
const span = 6.5 * 24 * HOUR;
const weekEdge = Math.floor(now / WEEK) * WEEK;

describe('unique users from the weeks (projection) agree with the rows', () => {
  let svc: TestService;
  let run: RunQuery;

  before(async function () {
    this.timeout(120_000);
    svc = await startTestService();
    const write = await svc.token(['events']);
    run = (q) => queryRows(svc.client, q, READ_SETTINGS);
    const rnd = fc.sample(fc.tuple(fc.integer({ min: 0, max: span }), fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 3 })), { numRuns: 700, seed: 7 });
    const items = rnd.map(([offset, user, where], i) => {
      const t = where === 0 ? Math.floor((now - offset) / HOUR) * HOUR : where === 1 && weekEdge > now - span ? weekEdge - (i % 3) + 1 : now - offset;
      const timestamp = new Date(Math.min(t, now - 1000)).toISOString();
      // user 0: anonymous (each event its own user)
      return { type: 'track', event_name: `e${i % 3}`, ...(user ? { user_alias: `u${user}` } : {}), timestamp };
    });
    for (let i = 0; i < items.length; i += 100) {
      const res = await svc.request('POST', '/1.0/event', { token: write, body: items.slice(i, i + 100) });
      expect(res.status, JSON.stringify(res.body).slice(0, 500)).to.equal(200);
    }
  });
  after(() => svc.close());

  const instant = fc.oneof(
    fc.integer({ min: now - span - 2 * HOUR, max: now + HOUR }),
    fc.integer({ min: -3, max: 3 }).map((d) => weekEdge + d),
    fc.integer({ min: 0, max: 160 }).map((h) => Math.floor(now / HOUR) * HOUR - h * HOUR),
  ).map((ms) => formatDb(fromMillis(ms)));
  const range = fc.option(fc.tuple(instant, instant).map(([a, b]) => (a <= b ? { start: a, end: b } : { start: b, end: a })), { nil: undefined });
  const rule = fc.record({ field: fc.constant('timestamp' as const), minInterval: fc.constantFrom('hour' as const, 'day' as const, 'month' as const), buckets: fc.integer({ min: 1, max: 100 }) });
  const normal = (rows: Record<string, unknown>[]) =>
    rows.map((r) => [Number(r.depth), r.k1 === null ? null : Number(r.k1), Number(r.doc_count), Number(r.other_doc_count), Number(r.unique_users)]).map((r) => JSON.stringify(r)).sort();
  const selectionOf = (range: EventSelection['range']): EventSelection => ({ orgId: svc.orgId, filtersBool: 'AND', filters: [], range });

  it('histograms with unique users: the same buckets, counts and users (property)', async function () {
    this.timeout(300_000);
    await fc.assert(
      fc.asyncProperty(range, rule, async (r, level) => {
        const rules: EventGroupByRule[] = [level];
        const weeks = await runEventAggregation(run, selectionOf(r), rules, ['count', 'unique_users']);
        const rows = await runEventAggregation(run, selectionOf(r), rules, ['count', 'unique_users'], run, { hours: false });
        expect(normal(weeks.rows)).to.deep.equal(normal(rows.rows));
      }),
      { numRuns: 60 },
    );
  });

  it('a deleted user leaves the weeks at once (DELETE /1.0/user/<alias>)', async () => {
    const read = await svc.token(['events:read']);
    const body = { group_by: [{ field: 'timestamp', date_histogram_min_interval: 'day', date_histogram_buckets: 10 }], metrics: ['unique_users'] };
    const before = await svc.request('SEARCH', '/1.0/event/aggregation', { token: read, body });
    const del = await svc.request('DELETE', '/1.0/user/u2', { token: await svc.token(['events']) });
    expect(del.status).to.equal(202);
    const after = await svc.request('SEARCH', '/1.0/event/aggregation', { token: read, body });
    expect(after.body.unique_users).to.equal(before.body.unique_users - 1);
    const rules: EventGroupByRule[] = [{ field: 'timestamp', minInterval: 'hour', buckets: 100 }];
    const weeks = await runEventAggregation(run, selectionOf(undefined), rules, ['count', 'unique_users']);
    const rows = await runEventAggregation(run, selectionOf(undefined), rules, ['count', 'unique_users'], run, { hours: false });
    expect(normal(weeks.rows)).to.deep.equal(normal(rows.rows));
  });
});
