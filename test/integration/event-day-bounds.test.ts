import { expect } from 'chai';
import fc from 'fast-check';
import type { CompiledQuery, RunQuery } from '../../src/clickhouse/sql.ts';
import { queryRows } from '../../src/query/request-cache.ts';
import { formatDb, fromMillis } from '../../src/time/iso.ts';
import { runEventAggregation, type EventGroupByRule } from '../../src/events/read/aggregation.ts';
import { runEventSearch } from '../../src/events/read/search.ts';
import type { EventFilterNode } from '../../src/events/read/filters.ts';
import type { EventSelection } from '../../src/events/read/source.ts';
import { EVENT_AGGREGATION_SETTINGS } from '../../src/events/read/settings.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * The event reads' day bounds are for the index analysis only (source.ts: `indexHint`), and the
 * events' timestamp is stored with T64 + LZ4 (schema/271). Both must leave every answer as it was:
 * - every query the rows path sends (aggregations over the rows, dense or ranked; the search's
 *   count and pages, with a cursor) answers the same rows as the same query with its day bounds
 *   evaluated on each row (the form before), on random ranges at millisecond precision around
 *   midnight, random filters and levels;
 * - the events read back, and a property filter's daily histogram, are the same with the
 *   timestamp stored the way schema/002 stored it (Delta, ZSTD(1)), every part rewritten.
 */
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const now = Date.now();
const span = 6 * DAY;
const PLANS = ['pro', 'free', 'team'];

/** The day bounds evaluated on each row: what source.ts wrote before `indexHint`. */
const hintless = (sql: string) => sql.replace(/indexHint\((toDate\(timestamp\) [<>]= toDate\(\{p\d+:DateTime64\(6, 'UTC'\)\}\))\)/g, '$1');

describe('event reads: day bounds for the index only, and the timestamp codec, leave the answers unchanged', () => {
  let svc: TestService;
  let hinted = 0;
  const run: RunQuery = async <T>(q: CompiledQuery) => {
    const rows = await queryRows<T>(svc.client, q, EVENT_AGGREGATION_SETTINGS);
    const before = hintless(q.sql);
    if (before !== q.sql) {
      hinted++;
      const reference = await queryRows<T>(svc.client, { sql: before, params: q.params }, EVENT_AGGREGATION_SETTINGS);
      expect(rows, q.sql).to.deep.equal(reference);
    }
    return rows;
  };

  before(async function () {
    this.timeout(120_000);
    svc = await startTestService();
    const write = await svc.token(['events']);
    // Events over the last 6 days, a third of them within a second of a midnight.
    const rnd = fc.sample(fc.tuple(fc.integer({ min: 0, max: span }), fc.integer({ min: 0, max: 3 }), fc.integer({ min: -1000, max: 1000 }), fc.integer({ min: 0, max: 2 })), { numRuns: 500, seed: 7 });
    const midnight = Math.floor((now - span) / DAY) * DAY + DAY;
    const items = rnd.map(([offset, plan, nearMidnight, kind], i) => {
      const t = Math.min(kind === 0 ? midnight + Math.floor(offset / DAY) * DAY + nearMidnight : now - span + offset, now - 1000);
      return { type: 'track', event_name: kind === 2 ? 'login' : 'purchase', user_alias: `u${i % 7}`, timestamp: new Date(t).toISOString(), properties: plan < 3 ? { plan: PLANS[plan] } : {} };
    });
    for (let i = 0; i < items.length; i += 100) {
      const res = await svc.request('POST', '/1.0/event', { token: write, body: items.slice(i, i + 100) });
      expect(res.status, JSON.stringify(res.body).slice(0, 500)).to.equal(200);
    }
  });
  after(() => svc.close());

  // Instants around the midnights of the data (within a second of one, half of them), and beyond it.
  const instant = fc.oneof(
    fc.integer({ min: now - span - DAY, max: now + HOUR }),
    fc.tuple(fc.integer({ min: -1, max: 6 }), fc.integer({ min: -1000, max: 1000 })).map(([d, ms]) => Math.floor((now - span) / DAY) * DAY + (d + 1) * DAY + ms),
  ).map((ms) => formatDb(fromMillis(ms)));
  const filter: fc.Arbitrary<EventFilterNode> = fc.oneof(
    fc.record({ kind: fc.constant('property' as const), key: fc.constant('plan'), test: fc.constantFrom(...PLANS).map((p) => ({ op: 'eq' as const, values: [p] })), negate: fc.boolean() }),
    fc.record({ kind: fc.constant('event_name' as const), op: fc.constant('eq' as const), negate: fc.boolean(), values: fc.constantFrom(['purchase'], ['login']) }),
  );
  const scope = fc.record({
    range: fc.option(fc.tuple(instant, instant).map(([a, b]) => (a <= b ? { start: a, end: b } : { start: b, end: a })), { nil: undefined }),
    filters: fc.array(filter, { minLength: 1, maxLength: 2 }),
    filtersBool: fc.constantFrom('AND' as const, 'OR' as const),
  });
  const rules = fc.oneof(
    fc.tuple(fc.record({ field: fc.constant('timestamp' as const), minInterval: fc.constantFrom('hour' as const, 'day' as const), buckets: fc.integer({ min: 1, max: 100 }) })),
    fc.tuple(fc.constant({ field: 'property' as const, propertyKey: 'plan' })),
  );

  it('aggregations and searches over the rows: the same rows as with the day bounds evaluated (property)', async function () {
    this.timeout(300_000);
    hinted = 0;
    await fc.assert(
      fc.asyncProperty(scope, rules, fc.boolean(), fc.integer({ min: 1, max: 30 }), async (s, r, dense, size) => {
        const sc: EventSelection = { orgId: svc.orgId, ...s };
        await runEventAggregation(run, sc, r as EventGroupByRule[], ['count'], run, { hours: false, dense });
        const first = await runEventSearch(run, { ...sc, size }, { hours: false });
        const last = first.rows[first.rows.length - 1];
        if (first.more && last) {
          await runEventSearch(run, { ...sc, size, after: { timestamp: last.timestamp, received_at: last.received_at, seq: Number(last.seq), event_id: last.event_id } }, { hours: false });
        }
      }),
      { numRuns: 40, seed: 11 },
    );
    expect(hinted, 'queries with the day bounds as index hints').to.be.greaterThan(40);
  });

  it('the timestamp in T64 + LZ4 reads back as it did in Delta + ZSTD(1) (schema/002)', async function () {
    this.timeout(120_000);
    const [column] = await (await svc.client.query({ query: "SELECT compression_codec FROM system.columns WHERE database = currentDatabase() AND table = 'events' AND name = 'timestamp'", format: 'JSONEachRow' })).json<{ compression_codec: string }>();
    expect(column.compression_codec).to.equal('CODEC(T64, LZ4)');
    const read = async () => {
      const rows = await queryRows(svc.client, { sql: 'SELECT event_id, timestamp FROM events WHERE org_id = {org:UUID} ORDER BY event_id', params: { org: svc.orgId } }, {});
      const sc: EventSelection = { orgId: svc.orgId, filtersBool: 'AND', filters: [{ kind: 'property', key: 'plan', test: { op: 'eq', values: ['pro'] }, negate: false }], range: { start: formatDb(fromMillis(now - span - DAY)), end: formatDb(fromMillis(now)) } };
      const histogram = await runEventAggregation(run, sc, [{ field: 'timestamp', minInterval: 'day', buckets: 100 }], ['count']);
      return { rows, histogram: histogram.rows };
    };
    const t64 = await read();
    expect(t64.rows).to.have.length(500);
    await svc.client.command({ query: "ALTER TABLE events MODIFY COLUMN timestamp DateTime64(3, 'UTC') CODEC(Delta(8), ZSTD(1))" });
    await svc.client.command({ query: 'ALTER TABLE events REWRITE PARTS', clickhouse_settings: { mutations_sync: '2' } });
    expect(await read()).to.deep.equal(t64);
  });
});
