import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectDatabase, type Database } from '../../src/clickhouse/connection.ts';
import { migrate } from '../../src/clickhouse/migrations.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { features } from '../../src/routes.ts';
import { createApp, type App } from '../../src/server/app.ts';
import { TokenCache } from '../../src/tokens/cache.ts';
import { mintToken } from '../../src/tokens/tokens.ts';
import { request, type TestResponse } from './harness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Bounded admission of POST /1.0/event against a real engine made slow by a real cause: the
 * engine process is stopped (SIGSTOP), so the flush in flight cannot finish and the queue stops
 * moving. With the queue's time bound at 100 ms, later requests must get a 503 with Retry-After
 * while the engine is still stopped (a refusal that waited for the engine could not arrive before
 * SIGCONT), a request whose client hung up while it waited must store nothing, and once the
 * engine runs again every acknowledged event must be stored exactly once.
 */
describe('event ingest admission under a stalled engine (SIGSTOP)', function () {
  this.timeout(120_000);
  let dataDir: string;
  let db: Database;
  let app: App;
  let url: string;
  let token: string;
  let enginePid = 0;
  const org = randomUUID();

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'tallyhouse-admission-'));
    const config = loadConfig({
      DATA_DIR: dataDir,
      PORT: '0',
      LOG_LEVEL: 'silent',
      INGEST_MAX_QUEUE_WAIT_MS: '100',
      RATE_LIMIT_EVENTS: '1000000',
      // The token is checked once, while the engine runs.
      TOKEN_CACHE_TTL_MS: '600000',
    });
    const log = createLogger('silent');
    db = await connectDatabase(config, log, { supervise: false });
    await migrate(db);
    const deps = { config, db, log, tokens: new TokenCache(config.tokenCacheTtlMs, config.tokenMaxConcurrentLookups) };
    app = createApp(deps, features(deps));
    url = `http://127.0.0.1:${await app.listen(0, '127.0.0.1')}`;
    token = (await mintToken(db.client(), org, ['events'])).token;
    enginePid = JSON.parse(readFileSync(join(dataDir, 'engine.json'), 'utf8')).pid;
  });
  after(async () => {
    if (enginePid) {
      try {
        process.kill(enginePid, 'SIGCONT');
      } catch {
        /* gone already */
      }
    }
    try {
      await app?.close();
    } finally {
      await db?.close();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    }
  });

  const batch = (prefix: string) => Array.from({ length: 100 }, (_, i) => ({ type: 'track', event_name: 'admission', message_id: `${prefix}-${i}` }));
  const send = (prefix: string) => request(url, 'POST', '/1.0/event', { token, body: batch(prefix) });
  const storedOf = async (prefix: string) => {
    const rs = await db.client().query({
      query: 'SELECT count() AS n, uniqExact(message_id) AS ids FROM events WHERE org_id = {org:UUID} AND startsWith(message_id, {p:String})',
      query_params: { org, p: `${prefix}-` },
      format: 'JSONEachRow',
    });
    const [row] = await rs.json<{ n: string; ids: string }>();
    return { rows: Number(row.n), ids: Number(row.ids) };
  };
  /** A request whose client hangs up before any answer: resolves once the socket is closed. */
  const sendAndHangUp = (prefix: string, hangUpAfterMs: number) =>
    new Promise<void>((resolve) => {
      const body = Buffer.from(JSON.stringify(batch(prefix)));
      const target = new URL(url);
      const req = http.request({
        host: target.hostname,
        port: target.port,
        method: 'POST',
        path: '/1.0/event',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': body.length },
      });
      req.on('error', () => resolve());
      req.on('close', () => resolve());
      req.end(body);
      setTimeout(() => req.destroy(), hangUpAfterMs);
    });

  it('answers 503 + Retry-After at once while the queue is stuck, drops a waiting request whose client left, and stores every acknowledged event once', async () => {
    // The claim view is loaded and the token cached while the engine runs.
    expect((await send('warm')).status).to.equal(200);

    process.kill(enginePid, 'SIGSTOP');
    let a: Promise<TestResponse>;
    let b: Promise<TestResponse>;
    let refused: TestResponse;
    try {
      // A is taken into a flush, whose INSERT cannot finish.
      a = send('a');
      await sleep(300);
      // D waits behind it; its client hangs up while it waits: it leaves the queue.
      await sendAndHangUp('d', 300);
      await sleep(200);
      // Nothing waits now, so B is admitted (were D still queued, past 100 ms, B would get 503).
      b = send('b');
      await sleep(400);
      // B has waited past the bound: C is refused before its body is parsed, engine still stopped.
      // (Were C queued instead, its answer would need the engine: it could never come before the
      // SIGCONT below, and the race ends the wait so that the test fails rather than hangs.)
      refused = await Promise.race([send('c'), sleep(20_000).then((): TestResponse => ({ status: 0, headers: new Headers(), body: 'no answer while the engine is stopped' }))]);
    } finally {
      process.kill(enginePid, 'SIGCONT');
    }
    expect(refused.status, JSON.stringify(refused.body)).to.equal(503);
    expect(refused.headers.get('retry-after')).to.match(/^\d+$/);
    expect(refused.body.error.code).to.equal('unavailable');

    const [ra, rb] = await Promise.all([a, b]);
    expect([ra.status, rb.status], JSON.stringify([ra.body, rb.body])).to.deep.equal([200, 200]);
    expect([ra.body.count, rb.body.count]).to.deep.equal([100, 100]);

    // The client of C retries after Retry-After; the client of A resends (it lost nothing, but may not know).
    const retried = await send('c');
    expect(retried.status).to.equal(200);
    const resent = await send('a');
    expect(resent.status).to.equal(200);
    expect(resent.body.duplicates).to.equal(100);

    expect(await storedOf('a')).to.deep.equal({ rows: 100, ids: 100 });
    expect(await storedOf('b')).to.deep.equal({ rows: 100, ids: 100 });
    expect(await storedOf('c')).to.deep.equal({ rows: 100, ids: 100 });
    expect(await storedOf('d'), 'the request whose client left while it waited').to.deep.equal({ rows: 0, ids: 0 });
  });
});
