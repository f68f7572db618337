import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { pollingCachedEntry, pollingCacheStats, POLL_WINDOW_MS, queryRows } from '../../src/query/request-cache.ts';
import { compiled, ParamBag } from '../../src/clickhouse/sql.ts';
import { MAX_RESPONSE_BUCKETS } from '../../src/responses/aggregation.ts';
import { MAX_CONCURRENT_LOOKUPS } from '../../src/tokens/cache.ts';
import { startTestService, type TestService } from './harness.ts';

const madeUpToken = () => `th_${randomBytes(32).toString('base64url')}`;

describe('memory and work bounds', () => {
  describe('ingest queue bounded in bytes (INGEST_MAX_QUEUED_BYTES)', () => {
    let svc: TestService;
    before(async () => {
      // 1 MiB of queue, and a batch delay long enough that concurrent requests are queued together.
      svc = await startTestService({ INGEST_MAX_QUEUED_BYTES: String(1024 * 1024), INGEST_BATCH_DELAY_MS: '1000' });
    });
    after(() => svc.close());

    it('answers 503 with Retry-After past the byte bound (well under the row bound), and stores exactly what it acknowledged', async () => {
      const token = await svc.token(['events']);
      const name = `bytes-${randomUUID()}`;
      // ~830 KB per request (100 prompts of 8,000 characters): the second one would pass 1 MiB.
      const batch = Array.from({ length: 100 }, () => ({
        type: 'copilot', event_name: 'service_copilot_user_prompt', agent_id: name, conversation_id: 'c', copilot_session_id: 's', prompt: 'p'.repeat(8000),
      }));
      const answers = await Promise.all(Array.from({ length: 4 }, () => svc.request('POST', '/1.0/event', { token, body: batch })));
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).to.deep.equal([200, 503, 503, 503]);
      for (const a of answers.filter((x) => x.status === 503)) {
        expect(a.headers.get('retry-after')).to.match(/^\d+$/);
        expect(a.body.error.message).to.match(/queue is full/);
      }
      const stored = await (await svc.client.query({ query: 'SELECT count() AS c FROM events WHERE agent_id = {n:String}', query_params: { n: name }, format: 'JSONEachRow' })).json<{ c: string }>();
      expect(Number(stored[0].c)).to.equal(100);
      // Once committed, the queue takes requests again.
      expect((await svc.request('POST', '/1.0/event', { token, body: batch })).status).to.equal(200);
    });
  });

  describe('unknown tokens', () => {
    let svc: TestService;
    // Below the default (MAX_CONCURRENT_LOOKUPS), so the setting is what bounds them.
    const LOOKUPS = MAX_CONCURRENT_LOOKUPS / 4;
    before(async () => {
      // A cache that outlives the test, however slow the machine: every count below is exact.
      svc = await startTestService({ TOKEN_CACHE_TTL_MS: '600000', TOKEN_MAX_CONCURRENT_LOOKUPS: String(LOOKUPS) });
    });
    after(() => svc.close());

    it('one unknown token sent 200 times at once costs one engine query (single flight, then the negative cache)', async () => {
      const token = madeUpToken();
      const before = svc.tokens.stats.queries;
      const answers = await Promise.all(Array.from({ length: 200 }, () => svc.request('POST', '/1.0/event', { token, body: [{ type: 'track', event_name: 'x' }] })));
      expect(new Set(answers.map((a) => a.status))).to.deep.equal(new Set([401]));
      const again = await svc.request('GET', '/1.0/release', { token });
      expect(again.status).to.equal(401);
      expect(svc.tokens.stats.queries - before).to.equal(1);
    });

    it('a flood of distinct unknown tokens keeps at most TOKEN_MAX_CONCURRENT_LOOKUPS queries in flight; the excess gets 503, never a 5xx of another kind', async () => {
      const tokens = Array.from({ length: 300 }, madeUpToken);
      const before = svc.tokens.stats.queries;
      const answers = await Promise.all(tokens.map((token) => svc.request('POST', '/1.0/event', { token, body: [{ type: 'track', event_name: 'x' }] })));
      const statuses = new Set(answers.map((a) => a.status));
      expect([...statuses].every((s) => s === 401 || s === 503), [...statuses].join()).to.equal(true);
      for (const a of answers.filter((x) => x.status === 503)) expect(a.headers.get('retry-after')).to.match(/^\d+$/);
      expect(svc.tokens.stats.maxInFlight).to.be.at.most(LOOKUPS);
      const queries = svc.tokens.stats.queries - before;
      expect(queries).to.be.at.most(tokens.length);
      // Those answered 401 are cached as unknown: sent again, they cost nothing.
      const known401 = tokens.filter((_, i) => answers[i].status === 401);
      expect(known401.length).to.be.above(0);
      const after = svc.tokens.stats.queries;
      for (const token of known401.slice(0, 50)) expect((await svc.request('GET', '/1.0/release', { token })).status).to.equal(401);
      expect(svc.tokens.stats.queries).to.equal(after);
      // A real token still works.
      expect((await svc.request('GET', '/1.0/release', { token: await svc.token(['releases']) })).status).to.equal(200);
    });
  });

  describe('polling cache', () => {
    let svc: TestService;
    before(async () => {
      svc = await startTestService();
    });
    after(() => svc.close());

    it('drops results once they are older than the polling window, without waiting for 1000 entries', async () => {
      const query = (i: number) => {
        const bag = new ParamBag();
        return compiled(`SELECT ${bag.add(i, 'UInt32')} AS i, repeat('x', 1000) AS pad`, bag);
      };
      // One compiled query through the polling cache, keyed by its text and parameters.
      const runDashboardQuery = (q: ReturnType<typeof query>) => pollingCachedEntry(svc.client, `${q.sql}\u0000${JSON.stringify(q.params)}`, () => queryRows(svc.client, q, {})).rows;
      for (let i = 0; i < 5; i++) await runDashboardQuery(query(i));
      const held = pollingCacheStats(svc.client);
      expect(held.entries).to.equal(5);
      expect(held.bytes).to.be.above(5 * 1000);
      // A repeat within the window is served from the cache: the same promise.
      const q0 = query(0);
      expect(runDashboardQuery(q0)).to.equal(runDashboardQuery(q0));
      await new Promise((r) => setTimeout(r, POLL_WINDOW_MS + 300));
      expect(pollingCacheStats(svc.client)).to.deep.equal({ entries: 0, bytes: 0 });
    });
  });

  describe('aggregation result rows', () => {
    let svc: TestService;
    before(async () => {
      svc = await startTestService();
    });
    after(() => svc.close());

    it(`the engine refuses a grouped result over ${MAX_RESPONSE_BUCKETS} + 1 rows (400 query_too_expensive) instead of sending it to the service`, async function () {
      this.timeout(300_000);
      const survey = randomUUID();
      // 70,000 responses, each alone in its (a, b, day) bucket: 80,101 grouped rows over 3 levels,
      // while the dense date series alone (100 buckets) passes the service's own check.
      await svc.client.command({
        query: `INSERT INTO survey_responses (org_id, survey_id, created_at, id, updated_at, hf_keys, hf_types, hf_strings, hf_bools, hf_numbers)
                SELECT {org:UUID}, {survey:UUID}, toDateTime64('2024-01-01', 6, 'UTC') + toIntervalDay(intDiv(number, 10000)) AS c, generateUUIDv4(), c,
                       ['a', 'b'], [0, 0], [toString(number % 100), toString(intDiv(number, 100) % 100)], [false, false], [0, 0]
                FROM numbers(70000)`,
        query_params: { org: svc.orgId, survey },
      });
      const res = await svc.request('SEARCH', `/1.0/survey/${survey}/response/aggregation`, {
        token: await svc.token(['responses:read']),
        body: {
          range: { field: 'created_at', start: '2024-01-01T00:00:00Z', end: '2024-01-10T00:00:00Z' },
          group_by: [
            { field: 'hidden_field', hidden_field_key: 'a' },
            { field: 'hidden_field', hidden_field_key: 'b' },
            { field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 10 },
          ],
        },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(400);
      expect(res.body.error.code).to.equal('query_too_expensive');
      // The engine's limit answered (its message), not the service's count of the rows it received.
      expect(res.body.error.message).to.match(/needs more rows or memory/);
    });
  });
});
