import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';
import { connectDatabase, type Database } from '../../src/clickhouse/connection.ts';
import { migrate } from '../../src/clickhouse/migrations.ts';
import type { RunQuery } from '../../src/clickhouse/sql.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { selectionOf } from '../../src/responses/compile.ts';
import { runSummary } from '../../src/responses/summary.ts';
import { sliceStartSql } from '../../src/responses/rollups/slices.ts';
import { features } from '../../src/routes.ts';
import { createApp, type App } from '../../src/server/app.ts';
import { TokenCache } from '../../src/tokens/cache.ts';
import { mintToken } from '../../src/tokens/tokens.ts';
import { request, startTestService, type TestService } from './harness.ts';
import { startInstance } from './instance.ts';

/**
 * SIGKILL under retrying writers of survey responses: a service instance, then the engine, is
 * killed while batches are in flight; every client resends its batch as it was until it gets a
 * 200 (on the other instance, or once the engine is back). Afterwards: 0 lost (every id holds the
 * latest version acknowledged), 0 duplicated (one row per id), no split identity (every stored
 * version of an id has one survey_id and created_at, the first claim's), and the rollups answer
 * what the raw table answers.
 *
 * The load: CLIENTS clients each send BATCHES batches of new ids, upserts of their own ids
 * acknowledged earlier (a later updated_at and another created_at, which the identity overrides),
 * and SHARED ids that every client writes at once with its own created_at (first writes racing).
 */
const CLIENTS = 4;
const BATCHES = 10;
const NEW = 60;
const UPSERTS = 20;
const SHARED = 10;

interface Sent {
  /** id -> the latest updated_at acknowledged. */
  latest: Map<string, string>;
  retried: number;
}

function workload(survey: string) {
  const base = Date.UTC(2024, 4, 6, 8);
  const iso = (ms: number) => new Date(ms).toISOString().replace('Z', '000Z');
  const own: string[][] = Array.from({ length: CLIENTS }, () => []);
  const shared = Array.from({ length: BATCHES }, () => Array.from({ length: SHARED }, () => randomUUID()));
  const record = (id: string, createdMs: number, updatedMs: number, i: number) => ({
    id, survey_id: survey, channel_id: survey, respondent_id: id, language: ['en', 'fr'][i % 2], completion: i % 3 ? 'fully_completed' : 'partially_completed',
    active: false, end_reason: 'completed', ended_at: '', created_at: iso(createdMs), updated_at: iso(updatedMs), last_answer_at: '', hidden_fields: [],
    answers: [{ t: 2, v_d: i % 11, cta_type: 'nps', question_id: survey, question_correlation_id: survey }],
  });
  /** Batch n of client c (the same body on every resend). */
  return (c: number, n: number) => {
    const body = [];
    for (let i = 0; i < NEW; i++) {
      const id = randomUUID();
      own[c].push(id);
      body.push(record(id, base + (c * 1000 + n * 100 + i) * 37_000, base + n * 1000, i));
    }
    // Upserts of ids acknowledged two batches ago (their first write is done).
    const done = own[c].slice(0, Math.max(0, own[c].length - 3 * NEW));
    for (let i = 0; i < Math.min(UPSERTS, done.length); i++) {
      body.push(record(done[(n * 7919 + i * 31) % done.length], base + 3_600_000 * (i + 1), base + n * 1000 + 500 + c, i + n));
    }
    for (let i = 0; i < SHARED; i++) body.push(record(shared[n][i], base + c * 60_000 + i * 3_600_000, base + n * 1000 + c, i));
    return body;
  };
}

type Post = (c: number, body: unknown[]) => Promise<{ status: number } | undefined>;

/** Runs the clients: each batch resent as it was until a 200; `onProgress` sees each acknowledged batch. */
async function runClients(post: Post, batchOf: ReturnType<typeof workload>, onProgress: (acked: number) => void): Promise<Sent> {
  const sent: Sent = { latest: new Map(), retried: 0 };
  let acked = 0;
  await Promise.all(Array.from({ length: CLIENTS }, async (_, c) => {
    for (let n = 0; n < BATCHES; n++) {
      const body = batchOf(c, n);
      for (let attempt = 0; ; attempt++) {
        const res = await post(c, body).catch(() => undefined);
        if (res?.status === 200) break;
        if (attempt === 0) sent.retried++;
        if (attempt > 400) throw new Error(`batch ${c}/${n} never acknowledged: ${res?.status}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      for (const r of body as { id: string; updated_at: string }[]) {
        if ((sent.latest.get(r.id) ?? '') < r.updated_at) sent.latest.set(r.id, r.updated_at);
      }
      onProgress(++acked);
    }
  }));
  return sent;
}

/** The checks of the header, on the org's stored rows. */
async function checkStored(client: ClickHouseClient, org: string, sent: Sent): Promise<void> {
  const query = async <T>(sql: string) => (await client.query({ query: sql, query_params: { org }, format: 'JSONEachRow' })).json<T>();
  const rows = await query<{ id: string; n: string; updated: string }>(
    `SELECT toString(id) AS id, count() AS n, toString(max(updated_at)) AS updated FROM survey_responses FINAL WHERE org_id = {org:UUID} GROUP BY id`);
  const stored = new Map(rows.map((r) => [r.id, r]));
  const lost = [...sent.latest].filter(([id, at]) => stored.get(id)?.updated !== at.replace('T', ' ').replace('Z', ''));
  expect(lost.slice(0, 3), 'every id holds its latest acknowledged version').to.deep.equal([]);
  expect(rows.filter((r) => Number(r.n) !== 1).length, 'one row per id').to.equal(0);
  expect(rows.length).to.equal(sent.latest.size);
  const split = await query<{ id: string }>(
    `SELECT toString(id) AS id FROM survey_responses WHERE org_id = {org:UUID} GROUP BY id HAVING uniqExact(survey_id, created_at) > 1`);
  expect(split, 'every version of an id under one identity').to.deep.equal([]);
  const claims = await query<{ id: string }>(
    `SELECT toString(r.id) AS id FROM (SELECT id, any(created_at) AS created_at FROM survey_responses WHERE org_id = {org:UUID} GROUP BY id) AS r ` +
    `JOIN (SELECT id, argMin(created_at, _block_number) AS first FROM survey_response_ids WHERE org_id = {org:UUID} GROUP BY id) AS c ON c.id = r.id ` +
    `WHERE r.created_at != c.first`);
  expect(claims, 'the identity stored is the first claim').to.deep.equal([]);
}

/** The summary as served (rollups where their marks allow) equals the summary of the raw table. */
async function expectRollupsExact(client: ClickHouseClient, org: string): Promise<void> {
  const scope = selectionOf(org, '*', { filters_bool: 'AND', filters: [], range: undefined });
  const run: RunQuery = async (q) => (await client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow' })).json();
  expect(await runSummary(run, scope)).to.deep.equal(await runSummary(run, scope, { rollups: false }));
}

describe('survey-response writes under SIGKILL, clients retrying', function () {
  this.timeout(300_000);

  describe('a service instance killed: retries on another instance', () => {
    let svc: TestService;
    let a: Awaited<ReturnType<typeof startInstance>>;
    let b: Awaited<ReturnType<typeof startInstance>>;
    before(async () => {
      svc = await startTestService();
      [a, b] = await Promise.all([startInstance(svc.database), startInstance(svc.database)]);
    });
    after(async () => {
      await Promise.all([a?.stop(), b?.stop()]);
      await svc?.close();
    });

    it('0 lost, 0 duplicated, no split identity; summaries exact', async () => {
      const token = await svc.token(['responses:read', 'responses:write']);
      const survey = randomUUID();
      let killed = false;
      // Client c writes to A until A is killed, then to B; the shared ids race between clients.
      const post: Post = (c, body) => request(killed || c % 2 ? b.url : a.url, 'POST', '/1.0/survey/response', { token, body });
      const sent = await runClients(post, workload(survey), (acked) => {
        if (!killed && acked >= (CLIENTS * BATCHES) / 3) {
          a.proc.kill('SIGKILL');
          killed = true;
        }
      });
      expect(a.proc.signalCode ?? (await new Promise((r) => a.proc.once('exit', (_c, signal) => r(signal))))).to.equal('SIGKILL');
      expect(sent.retried, 'the kill hit requests in flight').to.be.greaterThan(0);
      await checkStored(svc.client, svc.orgId, sent);
      // A's marks stay (its recomputes died with it): those hours are read raw, the rest from the rollup.
      expect((await request(b.url, 'POST', `/1.0/survey/${survey}/response/summary`, { token, body: {} })).status).to.equal(200);
      await expectRollupsExact(svc.client, svc.orgId);
    });
  });

  describe('the engine killed: retries until it is back', () => {
    let dataDir: string;
    let db: Database;
    let app: App;
    let url: string;
    let settle: () => Promise<unknown>;
    before(async () => {
      dataDir = mkdtempSync(join(tmpdir(), 'tallyhouse-response-kill-'));
      const config = loadConfig({ DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'silent' });
      const log = createLogger('silent');
      db = await connectDatabase(config, log, { supervise: true });
      await migrate(db);
      const deps = { config, db, log, tokens: new TokenCache() };
      const feats = features(deps);
      settle = () => Promise.all(feats.map((f) => f.settle?.()));
      app = createApp(deps, feats);
      url = `http://127.0.0.1:${await app.listen(0, '127.0.0.1')}`;
    });
    after(async () => {
      await app?.close();
      await db?.close();
      rmSync(dataDir, { recursive: true, force: true });
    });

    it('0 lost, 0 duplicated, no split identity; the rollups recomputed and exact', async () => {
      const org = randomUUID();
      const token = (await mintToken(db.client(), org, ['responses:read', 'responses:write'])).token;
      const survey = randomUUID();
      let killed = false;
      const post: Post = (_c, body) => request(url, 'POST', '/1.0/survey/response', { token, body });
      const sent = await runClients(post, workload(survey), (acked) => {
        if (!killed && acked >= (CLIENTS * BATCHES) / 3) {
          killed = true;
          process.kill(JSON.parse(readFileSync(join(dataDir, 'engine.json'), 'utf8')).pid, 'SIGKILL');
        }
      });
      expect(sent.retried, 'the kill hit requests in flight').to.be.greaterThan(0);
      await checkStored(db.client(), org, sent);
      // Every recompute cut by the kill ran again: the hours without a mark hold every response of
      // theirs. (A mark whose INSERT the kill cut after its commit, before its answer, stays: its
      // write got a 503, and those hours are read from the raw table until a rebuild.)
      await settle();
      const rows = async (sql: string) => (await db.client().query({ query: sql, query_params: { org }, format: 'JSONEachRow' })).json<Record<string, string>>();
      const pending = "SELECT survey_id, hour FROM survey_rollup_pending WHERE org_id = {org:UUID} GROUP BY survey_id, hour HAVING sum(pending) != 0";
      const [served] = await rows(`SELECT sum(t_rows) AS n, count() AS slices FROM survey_rollup FINAL WHERE org_id = {org:UUID} AND span = 'hour' AND (survey_id, start) NOT IN (${pending})`);
      const [raw] = await rows(`SELECT count() AS n FROM survey_responses FINAL WHERE org_id = {org:UUID} AND (survey_id, ${sliceStartSql('hour', 'created_at')}) NOT IN (${pending})`);
      const [left] = await rows(`SELECT count() AS n FROM (${pending})`);
      expect(Number(served.n), `hours recomputed (${left.n} of ${served.slices} still marked)`).to.equal(Number(raw.n));
      expect(Number(left.n), 'marks left by the kill').to.be.below(Number(served.slices) / 4);
      await expectRollupsExact(db.client(), org);
    });
  });
});
