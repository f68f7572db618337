import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectDatabase, type Database } from '../../src/clickhouse/connection.ts';
import { migrate } from '../../src/clickhouse/migrations.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import type { RunQuery } from '../../src/clickhouse/sql.ts';
import { selectionOf } from '../../src/responses/compile.ts';
import { runSummary } from '../../src/responses/summary.ts';
import { createApp, type App } from '../../src/server/app.ts';
import { features } from '../../src/routes.ts';
import { TokenCache } from '../../src/tokens/cache.ts';
import { mintToken } from '../../src/tokens/tokens.ts';
import { request } from './harness.ts';

/** The service owns and supervises its own engine here, as `tallyhouse serve` does. */
describe('embedded engine supervision', function () {
  this.timeout(300_000);
  let dataDir: string;
  let db: Database;
  let app: App;
  let url: string;
  let token: string;
  let settle: () => Promise<unknown>;
  /** The service's warnings and errors, one JSON line each. */
  const logged: string[] = [];

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'tallyhouse-recovery-'));
    const config = loadConfig({ DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'silent' });
    const log = createLogger('warn', { write: (line: string) => void logged.push(line) });
    db = await connectDatabase(config, log, { supervise: true });
    await migrate(db);
    const deps = { config, db, log, tokens: new TokenCache() };
    const feats = features(deps);
    settle = () => Promise.all(feats.map((f) => f.settle?.()));
    app = createApp(deps, feats);
    url = `http://127.0.0.1:${await app.listen(0, '127.0.0.1')}`;
    token = (await mintToken(db.client(), '22222222-3333-4444-8555-666666666666', ['events'])).token;
  });
  // Also after a set-up that failed half-way: the engine this suite started is stopped.
  after(async () => {
    try {
      await app?.close();
    } finally {
      await db?.close();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('answers 503 (never hangs) while the engine is down, recovers on its own, and loses nothing acknowledged', async () => {
    expect(db.mode()).to.equal('embedded-owned');
    let acknowledged = 0;
    const send = async () => {
      const res = await request(url, 'POST', '/1.0/event', { token, body: [{ type: 'track', event_name: 'recovery' }, { type: 'track', event_name: 'recovery' }] });
      if (res.status === 200) acknowledged += res.body.count;
      return res;
    };
    for (let i = 0; i < 20; i++) expect((await send()).status).to.equal(200);

    const { pid } = JSON.parse(readFileSync(join(dataDir, 'engine.json'), 'utf8'));
    process.kill(pid, 'SIGKILL');

    const statuses = new Set<number>();
    const deadline = Date.now() + 60_000;
    let recovered = false;
    while (Date.now() < deadline) {
      const started = Date.now();
      const res = await send();
      expect(Date.now() - started, 'a request must not hang while the engine is down').to.be.below(15_000);
      statuses.add(res.status);
      if (res.status === 503) expect(res.headers.get('retry-after')).to.match(/^\d+$/);
      if (res.status === 200 && statuses.has(503)) {
        recovered = true;
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(statuses.has(503), 'requests during the outage get 503').to.equal(true);
    expect(recovered, 'the service recovered on its own').to.equal(true);
    expect([...statuses].every((s) => s === 200 || s === 503)).to.equal(true);

    const rows = await (await db.client().query({ query: "SELECT count() AS c FROM events WHERE event_name = 'recovery'", format: 'JSONEachRow' })).json<{ c: string }>();
    expect(Number(rows[0].c)).to.equal(acknowledged);
    const ready = await request(url, 'GET', '/readyz');
    expect(ready.status).to.equal(200);
  });

  it('a rollup recompute cut by an engine crash is retried once the engine is back: the marks are taken back and the rollups serve', async () => {
    const org = randomUUID();
    const survey = randomUUID();
    const writeToken = (await mintToken(db.client(), org, ['responses:write'])).token;
    const start = Date.UTC(2024, 5, 3, 10);
    const records = Array.from({ length: 30 }, (_, i) => ({
      id: randomUUID(), survey_id: survey, channel_id: survey, respondent_id: randomUUID(), language: i % 2 ? 'en' : 'fr',
      completion: 'fully_completed', active: false, end_reason: 'completed', ended_at: '',
      created_at: new Date(start + i * 600_000).toISOString(), updated_at: new Date(start + i * 600_000).toISOString(),
      last_answer_at: '', hidden_fields: [], answers: [],
    }));
    const before = logged.length;
    const res = await request(url, 'POST', '/1.0/survey/response', { token: writeToken, body: records });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    // The recompute of these hours is queued (it starts ~50 ms after the write): freeze the engine
    // so the round cannot finish, let it start, then kill the engine under it.
    const { pid } = JSON.parse(readFileSync(join(dataDir, 'engine.json'), 'utf8'));
    process.kill(pid, 'SIGSTOP');
    await new Promise((r) => setTimeout(r, 300));
    process.kill(pid, 'SIGKILL');

    // The supervisor restarts the engine; the maintainer retries every 2 s until a round succeeds.
    await settle();
    const warnings = logged.slice(before).join('\n');
    expect(warnings, 'the cut round was logged').to.include('rollup recompute failed');
    const rows = async (sql: string) => (await db.client().query({ query: sql, query_params: { org }, format: 'JSONEachRow' })).json<Record<string, string>>();
    const [marks] = await rows('SELECT sum(pending) AS p FROM survey_rollup_pending WHERE org_id = {org:UUID}');
    expect(Number(marks.p), 'every mark taken back').to.equal(0);
    const [slices] = await rows("SELECT sum(t_rows) AS n FROM survey_rollup FINAL WHERE org_id = {org:UUID} AND span = 'hour'");
    expect(Number(slices.n), 'the hours recomputed with every response').to.equal(records.length);
    const scope = selectionOf(org, '*', { filters_bool: 'AND', filters: [], range: undefined });
    const run: RunQuery = async (q) => (await db.client().query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow' })).json();
    expect(await runSummary(run, scope)).to.deep.equal(await runSummary(run, scope, { rollups: false }));
  });
});
