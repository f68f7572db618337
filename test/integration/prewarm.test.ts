import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { CompiledQuery, RunQuery } from '../../src/clickhouse/sql.ts';
import { prewarmTable } from '../../src/clickhouse/prewarm.ts';
import * as v from 'valibot';
import { eventAggregationBodySchema, runEventAggregation } from '../../src/events/read/aggregation.ts';
import { eventSelectionOf } from '../../src/events/read/search.ts';
import { warmEventReads } from '../../src/events/read/warmup.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * The start-up warm-up: after prewarmTable, an event read answered from the hours (whole hours
 * from the event_counts projection, partial ones from event_times or the rows, as the engine
 * chooses on this small table) loads no mark file; the same read after the mark cache is dropped
 * loads some (the control: the test can fail). The engine's own counts per query
 * (system.query_log ProfileEvents), not timings. The warm-up of the read path for the nil
 * organization answers and writes nothing.
 */
const HOUR = 3_600_000;

describe('start-up warm-up: the engine caches and the event reads', function () {
  this.timeout(120_000);
  let svc: TestService;
  const now = Date.now();

  before(async () => {
    svc = await startTestService();
    const write = await svc.token(['events']);
    // Several INSERTs, so several parts, over the last 3 days.
    for (let batch = 0; batch < 4; batch++) {
      const items = Array.from({ length: 100 }, (_, i) => ({
        type: 'track',
        event_name: ['signup', 'login', 'purchase'][i % 3],
        user_alias: `u${i % 17}`,
        timestamp: new Date(now - 1000 - ((batch * 100 + i) * 3 * 24 * HOUR) / 400).toISOString(),
      }));
      const res = await svc.request('POST', '/1.0/event', { token: write, body: items });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
    }
  });
  after(() => svc.close());

  /** The count by event_name x hourly buckets whose edges fall inside hours, run with its own query id; returns its rows and the mark files it loaded. */
  async function countRead(): Promise<{ rows: unknown[]; loadedMarkFiles: number; projections: string[] }> {
    const queryId = randomUUID();
    const run: RunQuery = async <T>(q: CompiledQuery) =>
      (await svc.client.query({ query: q.sql, query_params: q.params, query_id: `${queryId}-${Math.random()}`, format: 'JSONEachRow', clickhouse_settings: { log_comment: queryId } })).json<T>();
    const body = v.parse(eventAggregationBodySchema, {
      range: { start: new Date(now - 72 * HOUR + 61_000).toISOString(), end: new Date(now).toISOString() },
      group_by: [{ field: 'event_name' }, { field: 'timestamp', date_histogram_min_interval: 'hour', date_histogram_buckets: 100 }],
    });
    const { rows } = await runEventAggregation(run, eventSelectionOf(svc.orgId, body), body.group_by, body.metrics);
    await svc.client.command({ query: 'SYSTEM FLUSH LOGS' });
    const [log] = await (await svc.client.query({
      query: "SELECT sum(ProfileEvents['LoadedMarksFiles']) AS files, groupUniqArrayArray(projections) AS projections FROM system.query_log WHERE type = 'QueryFinish' AND log_comment = {id:String}",
      query_params: { id: queryId },
      format: 'JSONEachRow',
    })).json<{ files: string; projections: string[] }>();
    return { rows, loadedMarkFiles: Number(log.files), projections: log.projections.map((p) => p.replace(/^.*\./, '')) };
  }

  it('a read after prewarmTable loads no mark file; the same read on a dropped mark cache does', async () => {
    await svc.client.command({ query: 'SYSTEM DROP MARK CACHE' });
    const cold = await countRead();
    expect(cold.projections).to.include('event_counts');
    expect(cold.loadedMarkFiles).to.be.greaterThan(0);

    await svc.client.command({ query: 'SYSTEM DROP MARK CACHE' });
    const warmed = await prewarmTable(svc.client, 'events');
    await prewarmTable(svc.client, 'releases');
    expect(warmed).to.include.members(['event_counts', 'event_times', 'event_user_hours']);
    const warm = await countRead();
    expect(warm.loadedMarkFiles).to.equal(0);
    // The same buckets (the engine's row order is not part of the answer).
    const sorted = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).sort();
    expect(sorted(warm.rows)).to.deep.equal(sorted(cold.rows));
  });

  it('the event reads warm-up answers for the nil organization and stores nothing', async () => {
    const count = async () => Number((await (await svc.client.query({ query: 'SELECT count() AS n FROM events', format: 'JSONEachRow' })).json<{ n: string }>())[0].n);
    const before = await count();
    await warmEventReads(svc.client, now);
    expect(await count()).to.equal(before);
  });
});
