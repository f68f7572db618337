import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectDatabase, type Database } from '../../src/clickhouse/connection.ts';
import { migrate } from '../../src/clickhouse/migrations.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { createApp, type App } from '../../src/server/app.ts';
import { features } from '../../src/routes.ts';
import { TokenCache } from '../../src/tokens/cache.ts';
import { mintToken } from '../../src/tokens/tokens.ts';
import { request } from './harness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * SIGKILL of the engine while flushes are in flight, clients retrying every batch until it is
 * acknowledged: an INSERT cut by the kill stored its events and their claims (one part) or
 * neither, so every event is stored exactly once. The service supervises its engine (as `tallyhouse
 * serve` does): requests get 503 while it is down, and a new engine starts on the same data.
 */
describe('engine SIGKILL during flushes, retrying clients (message_id)', function () {
  this.timeout(300_000);
  let dataDir: string;
  let db: Database;
  let app: App;
  let url: string;
  let token: string;
  const org = '33333333-4444-4555-8666-777777777777';

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'tallyhouse-engine-kill-'));
    const config = loadConfig({ DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'silent', RATE_LIMIT_EVENTS: '1000000' });
    db = await connectDatabase(config, createLogger('silent'), { supervise: true });
    await migrate(db);
    const deps = { config, db, log: createLogger('silent'), tokens: new TokenCache() };
    app = createApp(deps, features(deps));
    url = `http://127.0.0.1:${await app.listen(0, '127.0.0.1')}`;
    token = (await mintToken(db.client(), org, ['events'])).token;
  });
  after(async () => {
    await app?.close();
    await db?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('0 lost, 0 duplicated across six engine kills', async () => {
    const CLIENTS = 6;
    const BATCHES = 40; // per client, 100 events each: 24,000 events
    const KILLS = 6;
    // Large items, so that an INSERT takes long enough for a kill to land inside one.
    const batch = (c: number, n: number) =>
      Array.from({ length: 100 }, (_, i) => ({ type: 'track', event_name: 'load', message_id: `c${c}-b${n}-i${i}`, properties: { pad: 'x'.repeat(2000), i } }));
    let acknowledged = 0;
    let retried = 0;
    let duplicatesAnswered = 0;
    const statuses = new Map<string, number>();
    const client = async (c: number) => {
      for (let n = 0; n < BATCHES; n++) {
        for (let attempt = 0; ; attempt++) {
          const res = await request(url, 'POST', '/1.0/event', { token, body: batch(c, n) }).catch(() => undefined);
          const status = String(res?.status ?? 'no answer');
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          if (res?.status === 200) {
            acknowledged += res.body.count;
            duplicatesAnswered += res.body.duplicates;
            break;
          }
          if (attempt === 0) retried++;
          if (attempt > 400) throw new Error(`batch ${c}/${n} never acknowledged: ${status}`);
          await sleep(50);
        }
      }
    };
    let kills = 0;
    const killer = (async () => {
      for (let k = 0; k < KILLS; k++) {
        // Wait for the engine to be up and a few more batches to go through, then kill it in the
        // middle of whatever it is doing (flushes are back to back under this load).
        const target = acknowledged + 1_500 + Math.floor(Math.random() * 1_000);
        while (acknowledged < target) await sleep(5);
        const { pid } = JSON.parse(readFileSync(join(dataDir, 'engine.json'), 'utf8'));
        process.kill(pid, 'SIGKILL');
        kills++;
        await db.waitUntilUp(60_000).catch(() => undefined);
      }
    })();
    await Promise.all([...Array.from({ length: CLIENTS }, (_, c) => client(c)), killer]);

    expect(kills).to.equal(KILLS);
    expect(retried, 'the kills hit requests in flight').to.be.greaterThan(0);
    expect(acknowledged).to.equal(CLIENTS * BATCHES * 100);
    const rs = await db.client().query({
      query: 'SELECT count() AS stored, uniqExact(message_id) AS ids FROM events WHERE org_id = {org:UUID}',
      query_params: { org },
      format: 'JSONEachRow',
    });
    const [{ stored, ids }] = await rs.json<{ stored: string; ids: string }>();
    expect({ stored: Number(stored), ids: Number(ids) }, JSON.stringify(Object.fromEntries(statuses))).to.deep.equal({
      stored: CLIENTS * BATCHES * 100,
      ids: CLIENTS * BATCHES * 100,
    });
    // Only retries of batches whose first attempt was committed come back as duplicates.
    expect(duplicatesAnswered).to.be.at.most(retried * 100);
  });
});
