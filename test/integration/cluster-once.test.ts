import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectDatabase, type Database } from '../../src/clickhouse/connection.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { mintToken, type Scope } from '../../src/tokens/tokens.ts';
import { orgOnShard, startClusterInstance, type ClusterInstance } from './cluster-instances.ts';
import { request, type TestResponse } from './harness.ts';
import { stopProcess } from './processes.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Issues 12 and 21: exactly once across service instances on a cluster. A 2-shard embedded cluster
 * (TALLYHOUSE_EMBEDDED_SHARDS=2) and two service instances on it; every write is sent to both
 * instances at the same moment, so that both store the same message_id or run the same
 * Idempotency-Key before either sees the other's. Of each, one copy is kept, whichever instance
 * answers, and every request is acknowledged (src/claims/claims.ts: the claims of one
 * organization are on its shard, where the lowest block number is the first committed).
 */
describe('cluster: exactly once across two instances (message_id, Idempotency-Key)', function () {
  this.timeout(600_000);
  let dataDir: string;
  const instances: ClusterInstance[] = [];
  let db: Database;
  const env = (port: number) => ({
    ...process.env,
    DATA_DIR: dataDir,
    TALLYHOUSE_EMBEDDED_SHARDS: '2',
    PORT: String(port),
    LOG_LEVEL: 'warn',
    RATE_LIMIT_RELEASES: '100000',
    RATE_LIMIT_QUERIES: '100000',
    RATE_LIMIT_EVENTS: '100000',
  });

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'tallyhouse-cluster-once-'));
    instances.push(await startClusterInstance(env));
    instances.push(await startClusterInstance(env));
    db = await connectDatabase(loadConfig({ DATA_DIR: dataDir, TALLYHOUSE_EMBEDDED_SHARDS: '2' }), createLogger('silent'), { supervise: false });
  });

  // Runs also when before() failed half-way: whatever was started is stopped.
  after(async () => {
    await Promise.allSettled(instances.map((i) => stopProcess(i.proc)));
    await db?.close().catch(() => {});
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const token = async (org: string, scopes: Scope[]) => (await mintToken(db, org, scopes)).token;
  const rows = async <T>(query: string, org: string, params: Record<string, string> = {}) => {
    const rs = await db.client().query({ query, query_params: { ...params, o: org }, format: 'JSONEachRow', clickhouse_settings: { output_format_json_quote_64bit_integers: 0 } });
    return rs.json<T>();
  };
  /** The same request to both instances at once, twice to each: their answers. */
  const toBoth = (send: (via: ClusterInstance) => Promise<TestResponse>, copies = 1) =>
    Promise.all(Array.from({ length: copies }, () => instances.map(send)).flat());

  it('events: the same batches of message_ids through both instances at once are stored once each, every request acknowledged', async () => {
    const BATCHES_PER_ROUND = 5;
    const ROUNDS = 4;
    const report: string[] = [];
    for (const shard of [0, 1]) {
      const org = await orgOnShard(db, shard);
      const write = await token(org, ['events']);
      let acknowledgedNew = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const batches = Array.from({ length: BATCHES_PER_ROUND }, () =>
          Array.from({ length: 20 }, (_, i) => ({ type: 'track', event_name: `e${i % 3}`, user_alias: `u${i % 5}`, message_id: randomUUID() })),
        );
        const answers = await Promise.all(batches.map((body) => toBoth((via) => request(via.url, 'POST', '/1.0/event', { token: write, body }))));
        for (const res of answers.flat()) {
          expect(res.status, JSON.stringify(res.body)).to.equal(200);
          expect(res.body.count).to.equal(20);
          acknowledgedNew += res.body.count - res.body.duplicates;
        }
      }
      const [got] = await rows<{ stored: number; ids: number }>('SELECT count() AS stored, uniqExact(message_id) AS ids FROM events WHERE org_id = {o:UUID}', org);
      report.push(`shard ${shard}: ${got.stored} stored, ${got.ids} ids, ${acknowledgedNew} acknowledged as new`);
      expect(got.ids, report.join('; ')).to.equal(ROUNDS * BATCHES_PER_ROUND * 20);
      expect(got.stored, report.join('; ')).to.equal(got.ids);
      // Each stored item was answered as stored by exactly one request; the others counted it a duplicate.
      expect(acknowledgedNew, report.join('; ')).to.equal(got.ids);
    }
  });

  /**
   * Each key sent twice to each instance at once; a request told the first is still running (409
   * with Retry-After) asks again until it gets the answer. Returns the final answers per key.
   */
  async function sendKeys(keys: string[], send: (via: ClusterInstance, key: string) => Promise<TestResponse>): Promise<TestResponse[][]> {
    const settle = async (via: ClusterInstance, key: string) => {
      for (let attempt = 0; ; attempt++) {
        const res = await send(via, key);
        if (res.status !== 409 || res.body?.error?.code !== 'idempotency_conflict' || !res.headers.get('retry-after') || attempt >= 100) return res;
        await sleep(200);
      }
    };
    const answers: TestResponse[][] = [];
    // A few keys at a time: 4 requests per key, all racing.
    for (let i = 0; i < keys.length; i += 5) {
      answers.push(...(await Promise.all(keys.slice(i, i + 5).map((key) => toBoth((via) => settle(via, key), 2)))));
    }
    return answers;
  }

  /** Per key: the answers agree, exactly one of them ran the handler (no Idempotent-Replayed), and one answer is stored. */
  async function expectOnce(org: string, endpoint: string, keys: string[], answers: TestResponse[][], status: number, report: string[]) {
    const ran = answers.map((a) => a.filter((r) => r.headers.get('idempotent-replayed') !== 'true').length);
    const done = await rows<{ key: string; runs: number }>(
      `SELECT key, countIf(state = 'done') AS runs FROM idempotency_keys WHERE org_id = {o:UUID} AND endpoint = {e:String} GROUP BY key`,
      org,
      { e: endpoint },
    );
    report.push(`${endpoint}: handler ran ${ran.reduce((a, b) => a + b, 0)} times for ${keys.length} keys; answers stored ${done.reduce((a, r) => a + r.runs, 0)}`);
    for (const [k, a] of answers.entries()) {
      for (const res of a) expect(res.status, `${keys[k]}: ${JSON.stringify(res.body)}; ${report.join('; ')}`).to.equal(status);
      for (const res of a.slice(1)) expect(res.body, `${keys[k]}: the answers of one key; ${report.join('; ')}`).to.deep.equal(a[0].body);
      expect(ran[k], `${keys[k]}: requests that ran the handler; ${report.join('; ')}`).to.equal(1);
    }
    expect(done.map((r) => r.runs), report.join('; ')).to.deep.equal(keys.map(() => 1));
  }

  it('releases: one Idempotency-Key through both instances at once runs once, the other requests answer the first one\'s answer', async () => {
    const report: string[] = [];
    for (const shard of [0, 1]) {
      const org = await orgOnShard(db, shard);
      const write = await token(org, ['releases']);
      const keys = Array.from({ length: 30 }, () => randomUUID());
      const answers = await sendKeys(keys, (via, key) =>
        request(via.url, 'POST', '/1.0/release', { token: write, headers: { 'idempotency-key': key }, body: { name: `release ${key}`, version: '1.0.0' } }),
      );
      const [stored] = await rows<{ releases: number }>('SELECT count() AS releases FROM releases WHERE org_id = {o:UUID}', org);
      report.push(`shard ${shard}: ${stored.releases} releases for ${keys.length} keys`);
      await expectOnce(org, 'createRelease', keys, answers, 201, report);
      expect(stored.releases, report.join('; ')).to.equal(keys.length);
    }
  });

  it('survey responses: one Idempotency-Key through both instances at once runs once, the other requests answer the first one\'s answer', async () => {
    const report: string[] = [];
    for (const shard of [0, 1]) {
      const org = await orgOnShard(db, shard);
      const write = await token(org, ['responses:write']);
      const keys = Array.from({ length: 30 }, () => randomUUID());
      const bodies = new Map<string, Record<string, unknown>[]>(keys.map((key) => [key, responses(3)]));
      const answers = await sendKeys(keys, (via, key) => request(via.url, 'POST', '/1.0/survey/response', { token: write, headers: { 'idempotency-key': key }, body: bodies.get(key) }));
      // Each run writes every record once (one version each): a second run would store them again.
      const [stored] = await rows<{ versions: number; ids: number }>('SELECT count() AS versions, uniqExact(id) AS ids FROM survey_responses WHERE org_id = {o:UUID}', org);
      report.push(`shard ${shard}: ${stored.versions} versions of ${stored.ids} responses for ${keys.length} keys`);
      await expectOnce(org, 'writeSurveyResponses', keys, answers, 200, report);
      expect(stored.ids, report.join('; ')).to.equal(keys.length * 3);
      expect(stored.versions, report.join('; ')).to.equal(stored.ids);
    }
  });
});

/** `n` new survey responses (the fields a write requires). */
function responses(n: number): Record<string, unknown>[] {
  const survey = randomUUID();
  const question = randomUUID();
  return Array.from({ length: n }, (_, i) => ({
    id: randomUUID(),
    doc_type: 'response',
    channel_id: survey,
    respondent_id: randomUUID(),
    respondent_aliases: [`user-${i}`],
    survey_id: survey,
    scenario_id: survey,
    language: 'en',
    locale: 'en-US',
    question_id_path: '', question_correlation_id_path: '', action_id_path: '', action_correlation_id_path: '',
    group_ids: [],
    hidden_fields: [],
    emotions: { fear: null, sadness: null, anger: null, joy: null },
    answers: [{ t: 2, v_d: i % 11, cta_type: 'nps', key: 'nps', question_id: question, question_correlation_id: question, translations: [], time: '2024-03-01T10:01:00.000000Z' }],
    completion: 'fully_completed',
    active: false,
    end_reason: 'completed',
    ended_at: '2024-03-01T10:02:00.000000Z',
    created_at: '2024-03-01T10:00:00.000000Z',
    updated_at: '2024-03-01T10:02:00.000000Z',
    last_answer_at: '2024-03-01T10:01:00.000000Z',
  }));
}
