import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { connectDatabase, type Database } from '../../src/clickhouse/connection.ts';
import { migrate } from '../../src/clickhouse/migrations.ts';
import { createLogger } from '../../src/log.ts';
import { features } from '../../src/routes.ts';
import { createApp, type App } from '../../src/server/app.ts';
import { TokenCache } from '../../src/tokens/cache.ts';
import { mintToken } from '../../src/tokens/tokens.ts';
import { request } from './harness.ts';
import { ensureSharedEngine, testConfig } from './shared-engine.ts';

/** The request id and the per-request log line, read from the log the app writes. */
describe('request id and request log (HTTP)', () => {
  const lines: Array<Record<string, any>> = [];
  let db: Database;
  let app: App;
  let url: string;
  let token: string;
  const orgId = randomUUID();

  before(async () => {
    await ensureSharedEngine();
    const config = testConfig();
    db = await connectDatabase(config, createLogger('silent'), { supervise: false });
    await migrate(db);
    const stream = new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
        done();
      },
    });
    const deps = { config, db, log: createLogger('info', stream), tokens: new TokenCache() };
    app = createApp(deps, features(deps));
    url = `http://127.0.0.1:${await app.listen(0, '127.0.0.1')}`;
    token = (await mintToken(db.client(), orgId, ['releases'])).token;
  });
  after(async () => {
    await app.close();
    await db.adminClient().command({ query: `DROP DATABASE IF EXISTS ${db.name}` });
    await db.close();
  });

  const logOf = (id: string) => lines.filter((l) => l.msg === 'request' && l.request_id === id);

  it('generates a UUID when the client sends none, echoes it, and logs the request under it (never the token)', async () => {
    const res = await request(url, 'GET', '/1.0/release', { token });
    expect(res.status).to.equal(200);
    const id = res.headers.get('x-request-id')!;
    expect(id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const [line] = logOf(id);
    expect(line).to.deep.include({ level: 'info', method: 'GET', route: '/1.0/release', path: '/1.0/release', status: 200, org: orgId });
    expect(line.duration_ms).to.be.a('number');
    expect(JSON.stringify(lines)).to.not.include(token);
  });

  it("keeps a valid incoming X-Request-Id (a proxy's trace id), also on an error answer", async () => {
    const id = `trace-${randomUUID()}`;
    const res = await request(url, 'GET', '/1.0/release', { headers: { 'X-Request-Id': id } });
    expect(res.status).to.equal(401);
    expect(res.headers.get('x-request-id')).to.equal(id);
    expect(logOf(id)).to.have.length(1);
    expect(logOf(id)[0]).to.include({ status: 401, org: null });
  });

  for (const [name, bad] of [['too long', 'a'.repeat(129)], ['with spaces and quotes', 'a b"c'], ['empty', '']] as const) {
    it(`replaces an incoming X-Request-Id that is ${name}`, async () => {
      const res = await request(url, 'GET', '/healthz', { headers: { 'X-Request-Id': bad } });
      expect(res.status).to.equal(200);
      const id = res.headers.get('x-request-id')!;
      expect(id).to.not.equal(bad);
      expect(id).to.match(/^[0-9a-f-]{36}$/);
    });
  }
});
