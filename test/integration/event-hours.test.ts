import { expect } from 'chai';
import fc from 'fast-check';
import type { RunQuery } from '../../src/clickhouse/sql.ts';
import { queryRows } from '../../src/query/request-cache.ts';
import { formatDb, fromMillis } from '../../src/time/iso.ts';
import { runEventAggregation, type EventGroupByRule } from '../../src/events/read/aggregation.ts';
import { runEventSearch } from '../../src/events/read/search.ts';
import type { EventFilterNode } from '../../src/events/read/filters.ts';
import type { EventSelection } from '../../src/events/read/source.ts';
import { READ_SETTINGS } from '../../src/query/settings.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * The hours (src/events/read/hours.ts: the event_counts projection for whole hours, the rows
 * through event_times for the partial ones) against the rows alone, on random ranges at
 * millisecond precision, random histogram intervals (bucket edges inside hours), random type /
 * event_name filters and levels; and after a user deletion, which must leave the projections in
 * the same instant as the rows, on random reads again.
 */
const HOUR = 3_600_000;
const now = Date.now();
// Events may be up to 7 days old: they spread over the last 6 days, some on exact hour starts.
const span = 6 * 24 * HOUR;
const NAMES = ['signup', 'purchase', 'login', ''];

describe('event reads from the hours (projection) agree with the rows', () => {
  let svc: TestService;
  let write: string;
  let run: RunQuery;
  const orgOf = () => svc.orgId;

  before(async function () {
    this.timeout(120_000);
    svc = await startTestService();
    write = await svc.token(['events']);
    run = (q) => queryRows(svc.client, q, READ_SETTINGS);
    const rnd = fc.sample(fc.tuple(fc.integer({ min: 0, max: span }), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 5 }), fc.boolean()), { numRuns: 600, seed: 42 });
    const base = Math.floor((now - span) / HOUR) * HOUR + HOUR;
    const items = rnd.map(([offset, name, user, onHour], i) => {
      const t = onHour ? base + Math.floor(offset / HOUR) * HOUR : base + offset;
      const event = NAMES[name];
      return event
        ? { type: 'track', event_name: event, user_alias: `u${user}`, timestamp: new Date(Math.min(t, now - 1000)).toISOString(), properties: { i } }
        : { ...(i % 2 ? { type: 'page', url: 'https://example.com/' } : { type: 'screen', screen_name: 'Home' }), user_alias: `u${user}`, timestamp: new Date(Math.min(t, now - 1000)).toISOString() };
    });
    for (let i = 0; i < items.length; i += 100) {
      const res = await svc.request('POST', '/1.0/event', { token: write, body: items.slice(i, i + 100) });
      expect(res.status, JSON.stringify(res.body).slice(0, 500)).to.equal(200);
    }
  });
  after(() => svc.close());

  const instant = fc.integer({ min: now - span - 2 * HOUR, max: now + HOUR }).map((ms) => formatDb(fromMillis(ms)));
  const filter: fc.Arbitrary<EventFilterNode> = fc.oneof(
    fc.record({ kind: fc.constant('type' as const), op: fc.constant('in' as const), negate: fc.boolean(), values: fc.subarray(['track', 'page', 'screen'], { minLength: 1 }) }),
    fc.record({ kind: fc.constant('event_name' as const), op: fc.constant('eq' as const), negate: fc.boolean(), values: fc.constantFrom(['signup'], ['login'], ['']) }),
    fc.record({ kind: fc.constant('event_name' as const), op: fc.constant('null' as const), negate: fc.boolean() }),
  );
  const scope = fc.record({
    range: fc.option(fc.tuple(instant, instant).map(([a, b]) => (a <= b ? { start: a, end: b } : { start: b, end: a })), { nil: undefined }),
    filters: fc.array(filter, { maxLength: 2 }),
    filtersBool: fc.constantFrom('AND' as const, 'OR' as const),
  });
  const timestampRule = fc.record({ field: fc.constant('timestamp' as const), minInterval: fc.constantFrom('hour' as const, 'day' as const), buckets: fc.integer({ min: 1, max: 100 }) });
  const rules = fc.oneof(
    fc.tuple(timestampRule),
    fc.tuple(fc.constantFrom({ field: 'event_name' as const }, { field: 'type' as const }), timestampRule),
    fc.tuple(timestampRule, fc.constant({ field: 'event_name' as const })),
    fc.tuple(fc.constant({ field: 'type' as const })),
  );
  const sorted = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).sort();

  it('aggregations: the same rows, level by level (property)', async function () {
    this.timeout(300_000);
    await fc.assert(
      fc.asyncProperty(scope, rules, async (s, r) => {
        const sc: EventSelection = { orgId: orgOf(), ...s };
        const hours = await runEventAggregation(run, sc, r as EventGroupByRule[], ['count']);
        const rows = await runEventAggregation(run, sc, r as EventGroupByRule[], ['count'], run, { hours: false, dense: false });
        expect(sorted(hours.rows)).to.deep.equal(sorted(rows.rows));
        // The hours through the engine's ranked query (what a read takes when the ranking cuts),
        // and their groups without the partial hours' bucket arrays.
        const ranked = await runEventAggregation(run, sc, r as EventGroupByRule[], ['count'], run, { ranked: true });
        expect(sorted(ranked.rows)).to.deep.equal(sorted(rows.rows));
        const plain = await runEventAggregation(run, sc, r as EventGroupByRule[], ['count'], run, { resample: false });
        expect(sorted(plain.rows)).to.deep.equal(sorted(rows.rows));
        // The rows as dense buckets where they serve (timestamp levels, a range the series covers).
        const dense = await runEventAggregation(run, sc, r as EventGroupByRule[], ['count'], run, { hours: false });
        expect(sorted(dense.rows)).to.deep.equal(sorted(rows.rows));
      }),
      // No event in selection and no range: an empty series, whose NULL bucket key is a constant.
      { numRuns: 60, examples: [[{ range: undefined, filters: [{ kind: 'type', op: 'in', negate: true, values: ['track', 'page', 'screen'] }], filtersBool: 'AND' }, [{ field: 'timestamp', minInterval: 'hour', buckets: 1 }]]] },
    );
  });

  it('search: the same total, window counts and page (property)', async function () {
    this.timeout(300_000);
    await fc.assert(
      fc.asyncProperty(scope, fc.integer({ min: 0, max: 30 }), async (s, size) => {
        const input = { orgId: orgOf(), ...s, size };
        const hours = await runEventSearch(run, input);
        const rows = await runEventSearch(run, input, { hours: false });
        expect(hours.total).to.equal(rows.total);
        expect(hours.rows.map((e) => e.event_id)).to.deep.equal(rows.rows.map((e) => e.event_id));
        expect(hours.more).to.equal(rows.more);
      }),
      { numRuns: 40 },
    );
  });

  it('a deleted user leaves the hours at once (DELETE /1.0/user/<alias>)', async function () {
    this.timeout(300_000);
    const read = await svc.token(['events:read']);
    const body = { group_by: [{ field: 'event_name' }, { field: 'timestamp', date_histogram_min_interval: 'day', date_histogram_buckets: 10 }] };
    const before = await svc.request('SEARCH', '/1.0/event/aggregation', { token: read, body });
    const userEvents = await svc.request('SEARCH', '/1.0/event', { token: read, body: { size: 0, filters: [{ key: 'user_alias', operator: 'eq', value: 'u1' }] } });
    expect(userEvents.body.hits.total.value).to.be.greaterThan(0);
    const del = await svc.request('DELETE', '/1.0/user/u1', { token: await svc.token(['events']) });
    expect(del.status).to.equal(202);
    const after = await svc.request('SEARCH', '/1.0/event/aggregation', { token: read, body });
    expect(after.body.hits.total.value).to.equal(before.body.hits.total.value - userEvents.body.hits.total.value);
    const all = await svc.request('SEARCH', '/1.0/event', { token: read, body: { size: 0 } });
    expect(all.body.hits.total.value).to.equal(after.body.hits.total.value);
    // And the hours agree with the rows after the deletion.
    const sc: EventSelection = { orgId: orgOf(), filtersBool: 'AND', filters: [] };
    const r: EventGroupByRule[] = [{ field: 'timestamp', minInterval: 'hour', buckets: 100 }];
    const hours = await runEventAggregation(run, sc, r, ['count']);
    const rows = await runEventAggregation(run, sc, r, ['count'], run, { hours: false });
    expect(sorted(hours.rows)).to.deep.equal(sorted(rows.rows));
    // On random ranges, levels and pages too: the projections rebuilt in the parts the deletion
    // touched (event_counts' whole hours, event_times' partial hours) against the rows.
    await fc.assert(
      fc.asyncProperty(scope, rules, fc.integer({ min: 0, max: 30 }), async (s, levels, size) => {
        const selection: EventSelection = { orgId: orgOf(), ...s };
        const fromHours = await runEventAggregation(run, selection, levels as EventGroupByRule[], ['count']);
        const fromRows = await runEventAggregation(run, selection, levels as EventGroupByRule[], ['count'], run, { hours: false, dense: false });
        expect(sorted(fromHours.rows)).to.deep.equal(sorted(fromRows.rows));
        const fromDense = await runEventAggregation(run, selection, levels as EventGroupByRule[], ['count'], run, { hours: false });
        expect(sorted(fromDense.rows)).to.deep.equal(sorted(fromRows.rows));
        const page = await runEventSearch(run, { ...selection, size });
        const pageFromRows = await runEventSearch(run, { ...selection, size }, { hours: false });
        expect(page.total).to.equal(pageFromRows.total);
        expect(page.rows.map((e) => e.event_id)).to.deep.equal(pageFromRows.rows.map((e) => e.event_id));
      }),
      { numRuns: 20 },
    );
  });

  it('more names than a level keeps (the ranking cuts): the same rows as the ranked query over the rows', async function () {
    this.timeout(120_000);
    // 105 more names, the later ones with more events, so the ranking drops some and counts them in other_doc_count.
    const items = Array.from({ length: 105 }, (_, i) => Array.from({ length: 1 + (i % 3) }, (_, j) => ({
      type: 'track', event_name: `many ${String(i).padStart(3, '0')}`, user_alias: 'u9', timestamp: new Date(now - 1000 - (i * 7 + j) * 60_000).toISOString(),
    }))).flat();
    for (let i = 0; i < items.length; i += 100) {
      const res = await svc.request('POST', '/1.0/event', { token: write, body: items.slice(i, i + 100) });
      expect(res.status, JSON.stringify(res.body).slice(0, 500)).to.equal(200);
    }
    const sc: EventSelection = { orgId: orgOf(), filtersBool: 'AND', filters: [], range: { start: formatDb(fromMillis(now - 20 * HOUR + 1)), end: formatDb(fromMillis(now)) } };
    for (const r of [[{ field: 'event_name' }], [{ field: 'event_name' }, { field: 'timestamp', minInterval: 'hour', buckets: 20 }]] as EventGroupByRule[][]) {
      const hours = await runEventAggregation(run, sc, r, ['count']);
      const rows = await runEventAggregation(run, sc, r, ['count'], run, { hours: false, dense: false });
      expect(rows.rows.some((row) => Number(row.other_doc_count) > 0)).to.equal(true);
      expect(sorted(hours.rows)).to.deep.equal(sorted(rows.rows));
    }
  });
});
