import { expect } from 'chai';
import { startTestService, type TestService } from './harness.ts';

/**
 * DELETE /1.0/user/<alias> against the counts that read the partial hours (src/events/read/hours.ts:
 * the rows through the event_times projection). A lightweight DELETE leaves a normal projection's
 * rows as they were (ClickHouse #111791 / #104664: 'rebuild' does not rebuild a projection without
 * WHERE), so a count whose range edge falls inside an hour kept counting the deleted events while
 * the page listed none of them.
 */
const HOUR = 3_600_000;
const base = Math.floor((Date.now() - 3 * 24 * HOUR) / HOUR) * HOUR;

describe('a deleted user leaves the partial hours at once (HTTP)', () => {
  let svc: TestService;
  before(async function () {
    this.timeout(300_000);
    svc = await startTestService();
    const write = await svc.token(['events']);
    // 20,000 events over one day (833 an hour), a quarter of them by the user deleted below.
    for (let b = 0; b < 200; b++) {
      const items = Array.from({ length: 100 }, (_, i) => {
        const n = b * 100 + i;
        return { type: 'track', event_name: n % 3 ? 'a' : 'b', user_alias: `u${n % 4}`, timestamp: new Date(base + Math.floor((n * 24 * HOUR) / 20000)).toISOString() };
      });
      const res = await svc.request('POST', '/1.0/event', { token: write, body: items });
      expect(res.status).to.equal(200);
    }
    // One part, as a service's table holds after its merges: a day of it is 3 granules of the
    // table and an hour 1 of event_times, so the engine reads the partial hours from event_times
    // (on a few hundred events the table is as cheap, and the stale projection goes unseen).
    await svc.client.command({ query: 'OPTIMIZE TABLE events FINAL' });
  });
  after(() => svc.close());

  it('search totals and aggregation counts equal the events listed, ranges inside hours included', async function () {
    this.timeout(120_000);
    const read = await svc.token(['events:read']);
    const del = await svc.request('DELETE', '/1.0/user/u1', { token: await svc.token(['events']) });
    expect(del.status).to.equal(202);
    for (const [from, to] of [[0.5, 1.5], [3.25, 3.75], [10.1, 10.9], [0.25, 0.75]]) {
      const range = { field: 'timestamp', start: new Date(base + from * HOUR).toISOString(), end: new Date(base + to * HOUR).toISOString() };
      const page = await svc.request('SEARCH', '/1.0/event', { token: read, body: { size: 1000, range } });
      expect(page.status).to.equal(200);
      const listed = page.body.hits.events.length as number;
      expect(page.body.hits.events.some((e: { user_alias?: string }) => e.user_alias === 'u1')).to.equal(false);
      expect(page.body.hits.total.value, JSON.stringify(range)).to.equal(listed);
      const agg = await svc.request('SEARCH', '/1.0/event/aggregation', {
        token: read,
        body: { range, group_by: [{ field: 'timestamp', date_histogram_min_interval: 'hour', date_histogram_buckets: 100 }] },
      });
      expect(agg.body.hits.total.value, JSON.stringify(range)).to.equal(listed);
    }
  });
});
