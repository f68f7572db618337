import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectDatabase, type Database } from '../../src/clickhouse/connection.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { mintToken, type Scope } from '../../src/tokens/tokens.ts';
import { freePort, startClusterInstance, type ClusterInstance } from './cluster-instances.ts';
import { request } from './harness.ts';
import { stopProcess, track } from './processes.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * docs/api.md (deleting): after a DELETE's 202 the data is gone from every read at once, on every
 * instance. Two `serve` processes on one embedded engine (one data directory) sharing a Redis
 * (REDIS_URL): a dashboard read polled on B, the DELETE on A, the same read on B at once does not
 * count the deleted data (B's cached answer is keyed by the deletion generation that A renewed in
 * Redis before its 202: src/query/request-cache.ts). With Redis stopped before the DELETE, the
 * 202 comes once every answer cached before the deletion has expired, and B, which cannot read the
 * generation, reads without its cache. Without REDIS_URL, an instance on a shared engine warns at
 * start-up that deletions are then gone at once only from its own cached reads.
 */
describe('deletion gone at once on every instance (two instances, one engine, Redis)', function () {
  this.timeout(600_000);
  let dataDir: string;
  let redis: ChildProcess | undefined;
  let redisPort: number;
  const instances: ClusterInstance[] = [];
  let db: Database;
  const env = (extra: Record<string, string>) => (port: number) => ({
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    LOG_LEVEL: 'info',
    TALLYHOUSE_DEMO: '0',
    RATE_LIMIT_RELEASES: '100000',
    RATE_LIMIT_QUERIES: '100000',
    RATE_LIMIT_EVENTS: '100000',
    ...extra,
  });

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'tallyhouse-deletion-instances-'));
    redisPort = await freePort();
    redis = track(spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' }));
    redis.on('error', (err) => console.error(`redis-server: ${err.message}`));
    const withRedis = env({ REDIS_URL: `redis://127.0.0.1:${redisPort}` });
    instances.push(await startClusterInstance(withRedis));
    instances.push(await startClusterInstance(withRedis));
    // Both see Redis (the first check of each is logged): the reads below go through the shared generation.
    for (const i of instances) {
      for (const until = Date.now() + 60_000; !/redis reachable/.test(i.output()); await sleep(100)) {
        if (Date.now() > until) throw new Error(`no "redis reachable" line: ${i.output().slice(-2000)}`);
      }
    }
    db = await connectDatabase(loadConfig({ DATA_DIR: dataDir }), createLogger('silent'), { supervise: false });
  });

  after(async () => {
    // B, A: the first instance owns the engine.
    for (const i of [...instances].reverse()) await stopProcess(i.proc).catch(() => {});
    await db?.close().catch(() => {});
    await stopProcess(redis);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const token = async (org: string, scopes: Scope[]) => (await mintToken(db, org, scopes)).token;
  const record = (survey: string, i: number, who = randomUUID()) => ({
    id: randomUUID(), doc_type: 'response', channel_id: survey, respondent_id: who, respondent_aliases: [],
    survey_id: survey, scenario_id: survey, language: 'en', locale: 'en-US',
    question_id_path: 'q', question_correlation_id_path: 'qc', action_id_path: 'a', action_correlation_id_path: 'ac',
    group_ids: [], hidden_fields: [], emotions: { fear: null, sadness: null, anger: null, joy: null }, answers: [],
    completion: i % 2 ? 'fully_completed' : 'not_started', active: true, end_reason: '', ended_at: '',
    created_at: `2024-03-01T${String(i).padStart(2, '0')}:00:00.000000Z`, updated_at: '2024-03-02T00:00:00.000000Z', last_answer_at: '',
  });

  /** An organization with 5 responses (two of one respondent), written through A. */
  async function surveyOrg() {
    const org = randomUUID();
    const survey = randomUUID();
    const [w, r] = [await token(org, ['responses:write']), await token(org, ['responses:read'])];
    const respondent = randomUUID();
    const data = [record(survey, 1), record(survey, 2), record(survey, 3, respondent), record(survey, 4, respondent), record(survey, 5)];
    const res = await request(instances[0].url, 'POST', '/1.0/survey/response', { token: w, body: data });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    /** The dashboard reads on an instance: the summary's count and the aggregation's. */
    const counts = async (via: ClusterInstance) => {
      const summary = await request(via.url, 'SEARCH', `/1.0/survey/${survey}/response/summary`, { token: r, body: {} });
      const aggregation = await request(via.url, 'SEARCH', `/1.0/survey/${survey}/response/aggregation`, { token: r, body: { group_by: [{ field: 'completion' }] } });
      expect(summary.status, JSON.stringify(summary.body)).to.equal(200);
      expect(aggregation.status, JSON.stringify(aggregation.body)).to.equal(200);
      return {
        summary: Object.values(summary.body.completion as Record<string, number>).reduce((a, b) => a + b, 0),
        aggregation: (aggregation.body.aggregations.buckets as Array<{ doc_count: number }>).reduce((a, b) => a + b.doc_count, 0),
      };
    };
    return { w, data, respondent, counts };
  }

  /** A dashboard polling B: a few identical reads, the last ones from B's cache while their window lasts. */
  const poll = async <T>(read: () => Promise<T>) => {
    let last: T | undefined;
    for (let i = 0; i < 3; i++) last = await read();
    return last!;
  };

  it('survey response and respondent: polled on B, deleted on A, the same reads on B at once do not count them', async () => {
    const [a, b] = instances;
    const { w, data, respondent, counts } = await surveyOrg();
    expect(await poll(() => counts(b))).to.deep.equal({ summary: 5, aggregation: 5 });
    const one = await request(a.url, 'DELETE', `/1.0/survey/response/${data[0].id}`, { token: w });
    expect(one.status).to.equal(202);
    expect(one.body).to.deep.equal({ deleted: 1 });
    expect(await counts(b)).to.deep.equal({ summary: 4, aggregation: 4 });
    expect(await poll(() => counts(b))).to.deep.equal({ summary: 4, aggregation: 4 });
    const two = await request(a.url, 'DELETE', `/1.0/respondent/${respondent}`, { token: w });
    expect(two.body).to.deep.equal({ deleted: 2 });
    expect(await counts(b)).to.deep.equal({ summary: 2, aggregation: 2 });
  });

  it('event user: polled on B (search and aggregation), deleted on A, the same reads on B at once do not count the user', async () => {
    const [a, b] = instances;
    const org = randomUUID();
    const ev = await token(org, ['events', 'events:read']);
    const events = [
      ...Array.from({ length: 4 }, () => ({ type: 'track', user_alias: 'u-gone', event_name: 'open' })),
      ...Array.from({ length: 3 }, () => ({ type: 'track', user_alias: 'u-kept', event_name: 'open' })),
    ];
    expect((await request(a.url, 'POST', '/1.0/event', { token: ev, body: events })).status).to.equal(200);
    const counts = async (via: ClusterInstance) => {
      const search = await request(via.url, 'SEARCH', '/1.0/event', { token: ev, body: { size: 1 } });
      const aggregation = await request(via.url, 'SEARCH', '/1.0/event/aggregation', { token: ev, body: { group_by: [{ field: 'event_name' }], metrics: ['count', 'unique_users'] } });
      expect(search.status, JSON.stringify(search.body)).to.equal(200);
      expect(aggregation.status, JSON.stringify(aggregation.body)).to.equal(200);
      return { search: search.body.hits.total.value as number, aggregation: JSON.stringify(aggregation.body.aggregations ?? aggregation.body) };
    };
    const before = await poll(() => counts(b));
    expect(before.search).to.equal(7);
    const del = await request(a.url, 'DELETE', '/1.0/user/u-gone', { token: ev });
    expect(del.status).to.equal(202);
    expect(del.body.deleted).to.be.at.least(4);
    const after = await counts(b);
    expect(after.search).to.equal(3);
    expect(after.aggregation).to.not.equal(before.aggregation);
    // What a fresh read of A (whose cache the deletion cleared) says: B says the same.
    expect(after).to.deep.equal(await counts(a));
  });

  it('Redis stopped before the DELETE: the 202 comes once no answer cached before it can be served; B then reads without its cache and does not count it', async () => {
    const [a, b] = instances;
    const { w, data, counts } = await surveyOrg();
    expect(await poll(() => counts(b))).to.deep.equal({ summary: 5, aggregation: 5 });
    await stopProcess(redis);
    redis = undefined;
    const one = await request(a.url, 'DELETE', `/1.0/survey/response/${data[0].id}`, { token: w });
    expect(one.status).to.equal(202);
    expect(one.body).to.deep.equal({ deleted: 1 });
    expect(await counts(b)).to.deep.equal({ summary: 4, aggregation: 4 });
    expect(await counts(a)).to.deep.equal({ summary: 4, aggregation: 4 });
  });

  it('no REDIS_URL on a shared engine: the instance warns at start-up that deletions reach only its own cached reads at once', async () => {
    const c = await startClusterInstance(env({}));
    instances.push(c);
    expect(c.output()).to.match(/no REDIS_URL: a deletion is gone at once from this instance's cached reads only/);
    expect(instances[0].output()).to.not.match(/no REDIS_URL/);
  });
});
