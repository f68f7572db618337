import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectDatabase, type Database } from '../../src/clickhouse/connection.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { mintToken, type Scope } from '../../src/tokens/tokens.ts';
import { request, startTestService, type TestResponse, type TestService } from './harness.ts';
import { freePort, shardOf as clusterShardOf, startClusterInstance, type ClusterInstance as Instance } from './cluster-instances.ts';
import { stopProcess, track } from './processes.ts';
import { REDIS_SERVER, requireProgram } from './programs.ts';
import { rng } from './random.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Issue 12: a 2-shard embedded cluster (TALLYHOUSE_EMBEDDED_SHARDS=2), Redis, and two service
 * instances on it, driven over HTTP; a single embedded engine with the same data answers as the
 * reference. Shard placement is read from the shards' local tables.
 */
describe('cluster: 2 embedded shards, 2 service instances, Redis', function () {
  this.timeout(300_000);
  let dataDir: string;
  let redis: ChildProcess;
  let redisPort: number;
  const instances: Instance[] = [];
  let db: Database;
  let single: TestService;
  const env = (port: number) => ({
    ...process.env,
    DATA_DIR: dataDir,
    TALLYHOUSE_EMBEDDED_SHARDS: '2',
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    PORT: String(port),
    LOG_LEVEL: 'warn',
    RATE_LIMIT_RELEASES: '10',
    RATE_LIMIT_QUERIES: '100000',
    RATE_LIMIT_EVENTS: '100000',
  });

  let redisServer: string;
  const startRedis = () => {
    redis = track(spawn(redisServer, ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' }));
    // A spawn failure is reported on this event; unheard, it would be an uncaught exception that
    // mocha pins on whichever test runs then.
    redis.on('error', (err) => console.error(`redis-server: ${err.message}`));
  };

  const startInstance = () => startClusterInstance(env);
  const shardOf = (org: string) => clusterShardOf(db, org);
  const orgOnShard = async (shard: number) => {
    for (;;) {
      const org = randomUUID();
      if ((await shardOf(org)) === shard) return org;
    }
  };
  const token = async (org: string, scopes: Scope[]) => (await mintToken(db, org, scopes)).token;
  /** Rows of the org in each node's local table. */
  const rowsPerShard = async (table: string, org: string) =>
    Promise.all(
      db.cluster!.nodes().map(async (n) => {
        const rs = await n.client.query({ query: `SELECT count() AS c FROM ${table}_local WHERE org_id = {o:UUID}`, query_params: { o: org }, format: 'JSONEachRow' });
        return Number((await rs.json<{ c: string }>())[0].c);
      }),
    );

  before(async function () {
    redisServer = requireProgram(this, REDIS_SERVER);
    dataDir = mkdtempSync(join(tmpdir(), 'tallyhouse-cluster-'));
    redisPort = await freePort();
    startRedis();
    instances.push(await startInstance());
    instances.push(await startInstance());
    db = await connectDatabase(loadConfig({ DATA_DIR: dataDir, TALLYHOUSE_EMBEDDED_SHARDS: '2' }), createLogger('silent'), { supervise: false });
    single = await startTestService();
  });

  // Runs also when before() failed half-way (mocha runs after-all hooks then): it stops whatever
  // was started, so a failed set-up leaves no instance, engine or Redis behind.
  after(async () => {
    await Promise.allSettled(instances.map((i) => stopProcess(i.proc)));
    await db?.close().catch(() => {});
    await single?.close();
    redis?.kill('SIGKILL');
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  // --- data -------------------------------------------------------------------------------------

  const SURVEYS = [randomUUID(), randomUUID()];
  const QUESTION = randomUUID();
  function records(orgSeed: number, n: number): Record<string, unknown>[] {
    const r = rng(orgSeed);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
    return Array.from({ length: n }, (_, i) => {
      const created = Date.UTC(2024, 2, 1) + Math.floor(r() * 20 * 86_400_000);
      const active = r() < 0.3;
      const iso = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}.${String(i % 1_000_000).padStart(6, '0')}Z`;
      return {
        id: randomUUID(),
        doc_type: 'response',
        channel_id: SURVEYS[0],
        respondent_id: randomUUID(),
        respondent_aliases: [`user-${i}`],
        survey_id: pick(SURVEYS),
        scenario_id: SURVEYS[1],
        language: pick(['en', 'fr', 'de']),
        locale: 'en-US',
        question_id_path: '', question_correlation_id_path: '', action_id_path: '', action_correlation_id_path: '',
        group_ids: [],
        hidden_fields: [{ key: 'support', t: 0, v_s: pick(['desktop', 'mobile']) }],
        emotions: { fear: null, sadness: null, anger: null, joy: null },
        answers: [{ t: 2, v_d: Math.floor(r() * 11), cta_type: 'nps', key: 'nps', question_id: QUESTION, question_correlation_id: QUESTION, translations: [], time: iso(created + 60_000) }],
        completion: pick(['not_started', 'partially_completed', 'fully_completed']),
        active,
        end_reason: active ? '' : pick(['completed', 'closed', 'expired']),
        ended_at: active ? '' : iso(created + 120_000),
        created_at: iso(created),
        updated_at: iso(created + 120_000),
        last_answer_at: iso(created + 60_000),
      };
    });
  }

  const BODIES: Array<[string, string, unknown]> = [
    ['SEARCH', '/response', { size: 20 }],
    ['SEARCH', '/response', { size: 5, offset: 7, filters: [{ type: 'response', key: 'language', operator: 'in', values: ['en', 'de'] }] }],
    // Ranges holding whole weeks: the count reads those by partition (_partition_id) through the Distributed table.
    ['SEARCH', '/response', { size: 5, range: { start: '2024-03-01T00:00:00Z', end: '2024-03-20T12:00:00Z' }, filters: [{ type: 'response', key: 'respondent_alias', operator: 'contains', value: 'user-1' }] }],
    ['SEARCH', '/response', { size: 0, range: { start: '2024-03-01T00:00:00Z', end: '2024-03-20T12:00:00Z' }, filters: [{ type: 'response', key: 'respondent_alias', operator: 'not_contains', value: 'user-1' }] }],
    ['SEARCH', '/response/summary', {}],
    ['SEARCH', '/response/summary', { filters: [{ type: 'response.hidden_field', key: 'support', operator: 'eq', value: 'mobile' }] }],
    // One answer: the answer totals (schema/111, a view between the local tables of each shard).
    ['SEARCH', '/response/summary', { filters: [{ type: 'response.answer', key: QUESTION, operator: 'eq', value: 7 }] }],
    ['SEARCH', '/response', { size: 3, filters: [{ type: 'response.answer', key: QUESTION, operator: 'eq', value: 9 }] }],
    ['SEARCH', '/response/aggregation', { filters: [{ type: 'response.answer', key: QUESTION, operator: 'eq', value: 10 }], group_by: [{ field: 'survey_id' }], metrics: ['nps', 'completion'] }],
    ['SEARCH', '/response/aggregation', { group_by: [{ field: 'completion' }, { field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 30 }] }],
    ['SEARCH', '/response/aggregation', { group_by: [{ field: 'survey_id' }, { field: 'answer', question_id: QUESTION }] }],
    ['SEARCH', '/response/aggregation', { range: { start: '2024-03-05T00:00:00Z', end: '2024-03-12T12:00:00Z' }, group_by: [{ field: 'end_reason' }, { field: 'hidden_field', hidden_field_key: 'support' }] }],
    // No match and no range: the histogram has no bound, so no bucket (its key is NULL on every row).
    ['SEARCH', '/response/aggregation', { filters: [{ type: 'response.hidden_field', key: 'support', operator: 'eq', value: 'nobody' }], group_by: [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 30 }] }],
    ['SEARCH', '/response/aggregation', { filters: [{ type: 'response.hidden_field', key: 'support', operator: 'eq', value: 'nobody' }], group_by: [{ field: 'completion' }, { field: 'ended_at', date_histogram_min_interval: 'month', date_histogram_buckets: 5 }] }],
  ];
  const EVENT_BODIES: Array<[string, string, unknown]> = [
    ['SEARCH', '/1.0/event/aggregation', { group_by: [{ field: 'event_name' }, { field: 'timestamp', date_histogram_min_interval: 'hour', date_histogram_buckets: 24 }], metrics: ['count', 'unique_users'] }],
    ['SEARCH', '/1.0/event/aggregation', { filters: [{ key: 'event_name', operator: 'eq', value: 'nobody' }], group_by: [{ field: 'timestamp', date_histogram_min_interval: 'day', date_histogram_buckets: 7 }] }],
    ['SEARCH', '/1.0/event/aggregation', { filters: [{ key: 'event_name', operator: 'eq', value: 'nobody' }], group_by: [{ field: 'type' }, { field: 'timestamp', date_histogram_min_interval: 'month', date_histogram_buckets: 7 }], metrics: ['count', 'unique_users'] }],
    // Unique users from the hours' bitmaps of dense user numbers (src/events/read/user-hours.ts).
    ['SEARCH', '/1.0/event/aggregation', { range: { start: '2024-03-01T01:30:00Z', end: '2024-03-01T20:10:00.5Z' }, group_by: [{ field: 'timestamp', date_histogram_min_interval: 'hour', date_histogram_buckets: 20 }], metrics: ['count', 'unique_users'] }],
  ];
  /** Events of one org, at fixed times so that the cluster and the single node hold the same. */
  const eventRecords = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      type: 'track',
      event_name: ['open', 'pay', 'close'][i % 3],
      user_alias: `u${i % 7}`,
      timestamp: new Date(Date.UTC(2024, 2, 1) + i * 1_234_567).toISOString(),
      message_id: randomUUID(),
    }));
  const strip = (res: TestResponse) => ({ status: res.status, body: { ...res.body, took: 0 } });

  // --- tests ------------------------------------------------------------------------------------

  it('every organization\'s rows live on exactly one shard (responses, events, derived tables)', async () => {
    for (const shard of [0, 1, 0, 1]) {
      const org = await orgOnShard(shard);
      const write = await token(org, ['responses:write', 'events']);
      const via = instances[shard];
      expect((await request(via.url, 'POST', '/1.0/survey/response', { token: write, body: records(shard + 1, 30) })).status).to.equal(200);
      const events = [{ type: 'identify', user_alias: 'u1', properties: { plan: 'pro' } }, { type: 'group.assign', user_alias: 'u1', group_name: 'g' }, { type: 'track', event_name: 'x' }];
      expect((await request(via.url, 'POST', '/1.0/event', { token: write, body: events })).status).to.equal(200);
      for (const [table, n] of [['survey_responses', 30], ['events', 3], ['user_properties', 1], ['group_memberships', 1]] as const) {
        const counts = await rowsPerShard(table, org);
        expect(counts[shard], `${table} on its shard`).to.equal(n);
        expect(counts[1 - shard], `${table} on the other shard`).to.equal(0);
      }
      // Written by the rollup recompute, which follows the acknowledgement.
      let answerTotals = await rowsPerShard('survey_rollup_answers', org);
      for (let i = 0; i < 100 && answerTotals[shard] === 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
        answerTotals = await rowsPerShard('survey_rollup_answers', org);
      }
      expect(answerTotals[shard], 'survey_rollup_answers on its shard').to.be.greaterThan(0);
      expect(answerTotals[1 - shard], 'survey_rollup_answers on the other shard').to.equal(0);
    }
  });

  it('search, summary and aggregation answer exactly as a single node on the same data; upserts and tenants hold', async () => {
    for (const shard of [0, 1]) {
      const org = await orgOnShard(shard);
      const data = records(10 + shard, 200);
      // Later versions of some responses, written through the OTHER instance: they move buckets.
      const updates = data.slice(0, 40).map((d) => ({ ...d, completion: 'fully_completed', updated_at: '2025-01-01T00:00:00.000000Z' }));
      const [cw, cr] = [await token(org, ['responses:write']), await token(org, ['responses:read'])];
      const [sw, sr] = [await single.token(['responses:write'], org), await single.token(['responses:read'], org)];
      expect((await request(instances[0].url, 'POST', '/1.0/survey/response', { token: cw, body: data })).status).to.equal(200);
      expect((await request(instances[1].url, 'POST', '/1.0/survey/response', { token: cw, body: updates })).status).to.equal(200);
      expect((await single.request('POST', '/1.0/survey/response', { token: sw, body: data })).status).to.equal(200);
      expect((await single.request('POST', '/1.0/survey/response', { token: sw, body: updates })).status).to.equal(200);
      for (const [method, suffix, body] of BODIES) {
        for (const via of instances) {
          const got = await request(via.url, method, `/1.0/survey/*${suffix}`, { token: cr, body });
          const want = await single.request(method, `/1.0/survey/*${suffix}`, { token: sr, body });
          expect(want.status, `${suffix} ${JSON.stringify(body)}: ${JSON.stringify(want.body)}`).to.equal(200);
          expect(strip(got), `${suffix} ${JSON.stringify(body)}`).to.deep.equal(strip(want));
        }
      }
      const all = await request(instances[1].url, 'SEARCH', '/1.0/survey/*/response', { token: cr, body: { size: 0 } });
      expect(all.body.hits.total.value).to.equal(200); // one row per id after the upserts
      // Another organization (on either shard) sees none of it.
      for (const other of [await orgOnShard(0), await orgOnShard(1)]) {
        const theirs = await request(instances[0].url, 'SEARCH', '/1.0/survey/*/response', { token: await token(other, ['responses:read']), body: { size: 0 } });
        expect(theirs.body.hits.total.value).to.equal(0);
      }
    }
  });

  it('event aggregations answer exactly as a single node on the same data, with or without a match', async () => {
    for (const shard of [0, 1]) {
      const org = await orgOnShard(shard);
      const events = eventRecords(60);
      const [cw, cr] = [await token(org, ['events']), await token(org, ['events:read'])];
      const [sw, sr] = [await single.token(['events'], org), await single.token(['events:read'], org)];
      expect((await request(instances[shard].url, 'POST', '/1.0/event', { token: cw, body: events })).status).to.equal(200);
      expect((await single.request('POST', '/1.0/event', { token: sw, body: events })).status).to.equal(200);
      for (const [method, path, body] of EVENT_BODIES) {
        for (const via of instances) {
          const got = await request(via.url, method, path, { token: cr, body });
          const want = await single.request(method, path, { token: sr, body });
          expect(got.status, `${path} ${JSON.stringify(body)}: ${JSON.stringify(got.body)}`).to.equal(200);
          expect(strip(got), `${path} ${JSON.stringify(body)}`).to.deep.equal(strip(want));
        }
      }
    }
  });

  it('dense user numbers: new users of one organization through both instances at once get one number each, from its shard\'s log', async () => {
    for (const shard of [0, 1]) {
      const org = await orgOnShard(shard);
      const write = await token(org, ['events']);
      const posts = Array.from({ length: 12 }, (_, i) =>
        request(instances[i % 2].url, 'POST', '/1.0/event', { token: write, body: Array.from({ length: 20 }, (_, k) => ({ type: 'track', event_name: 'n', user_alias: `n${(i * 5 + k * 3) % 60}` })) }),
      );
      for (const res of await Promise.all(posts)) expect(res.status).to.equal(200);
      const claims = await rowsPerShard('event_user_numbers', org);
      expect(claims[shard], 'claims on its shard').to.be.greaterThan(0);
      expect(claims[1 - shard], 'claims on the other shard').to.equal(0);
      const rs = await db.client().query({
        query: `SELECT uniqExact(user_id) AS users, uniqExact(user_num) AS numbers, uniqExact(user_id, user_num) AS pairs, countIf(user_num = 0) AS unnumbered
                FROM events WHERE org_id = {o:UUID} AND anonymous = 0`,
        query_params: { o: org },
        format: 'JSONEachRow',
      });
      const [got] = await rs.json<Record<string, number | string>>();
      expect(Object.fromEntries(Object.entries(got).map(([k, v]) => [k, Number(v)]))).to.deep.equal({ users: 60, numbers: 60, pairs: 60, unnumbered: 0 });
    }
    // The demo's events, seeded inside the engine on the first start, were numbered node by node (schema/231's statements).
    for (const n of db.cluster!.nodes()) {
      const rs = await n.client.query({ query: 'SELECT countIf(user_num = 0) AS unnumbered, count() AS known FROM events_local WHERE anonymous = 0', format: 'JSONEachRow' });
      const [{ unnumbered, known }] = await rs.json<{ unnumbered: string; known: string }>();
      expect(Number(known)).to.be.greaterThan(0);
      expect(Number(unnumbered), n.url).to.equal(0);
    }
  });

  it('funnels, retention and feedback cohorts answer exactly as a single node on the same data', async () => {
    const base = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 3 * 86_400_000;
    const r = rng(31);
    // user-0..user-19 (the respondents of records()) and anonymous events, over three days.
    const events = Array.from({ length: 300 }, () => {
      const u = Math.floor(r() * 22);
      return { type: 'track', event_name: ['a', 'b', 'c'][Math.floor(r() * 3)], ...(u < 20 ? { user_alias: `user-${u}` } : {}), timestamp: new Date(base + Math.floor(r() * 3 * 86_400) * 1000).toISOString() };
    });
    const steps = ['a', 'b', 'c'].map((n) => ({ filters: [{ key: 'event_name', operator: 'eq', value: n }] }));
    const split = [{ name: 'promoters', cohort: { nps: 'promotor' } }, { name: 'detractors', cohort: { nps: 'detractor', survey_ids: [SURVEYS[0]] } }];
    const queries: [string, unknown][] = [
      ['/1.0/event/funnel', { steps, window_seconds: 86_400, split_by_cohorts: split }],
      ['/1.0/event/funnel', { steps, order: 'strict', window_seconds: 86_400, cohort: { completion: 'fully_completed' }, breakdown: { field: 'timestamp', interval: 'day' } }],
      ['/1.0/event/retention', { start: steps[0], period: 'day', periods: 2, split_by_cohorts: split }],
      ['/1.0/event/aggregation', { cohort: { nps: 'detractor' }, group_by: [{ field: 'event_name' }], metrics: ['unique_users'] }],
    ];
    for (const shard of [0, 1]) {
      const org = await orgOnShard(shard);
      const data = records(40 + shard, 20);
      const [cw, cr] = [await token(org, ['responses:write', 'events']), await token(org, ['events:read'])];
      const [sw, sr] = [await single.token(['responses:write', 'events'], org), await single.token(['events:read'], org)];
      for (const [url, t] of [[instances[shard].url, cw], [single.url, sw]] as const) {
        expect((await request(url, 'POST', '/1.0/survey/response', { token: t, body: data })).status).to.equal(200);
        expect((await request(url, 'POST', '/1.0/event', { token: t, body: events.slice(0, 100) })).status).to.equal(200);
        expect((await request(url, 'POST', '/1.0/event', { token: t, body: events.slice(100, 200) })).status).to.equal(200);
        expect((await request(url, 'POST', '/1.0/event', { token: t, body: events.slice(200) })).status).to.equal(200);
      }
      for (const [path, body] of queries) {
        const want = await single.request('SEARCH', path, { token: sr, body });
        expect(want.status, JSON.stringify(want.body)).to.equal(200);
        // The cohorts hold someone: the comparison is not of empty answers.
        if (want.body.cohorts?.[0]?.steps) expect(want.body.cohorts.map((c: { steps: { users: number }[] }) => c.steps[0].users)).to.not.include(0);
        for (const via of instances) {
          const got = await request(via.url, 'SEARCH', path, { token: cr, body });
          expect(strip(got), `${path} ${JSON.stringify(body)}`).to.deep.equal(strip(want));
        }
      }
    }
  });

  it('deletions reach the shard that holds the data: a response, a respondent and a user, gone through either instance', async () => {
    // Shard 1: the node the instances do not send their DDL through first.
    for (const shard of [1]) {
      const org = await orgOnShard(shard);
      const [w, r, ev] = [await token(org, ['responses:write']), await token(org, ['responses:read']), await token(org, ['events', 'events:read'])];
      const data = records(20 + shard, 6);
      data[1].respondent_id = data[2].respondent_id;
      expect((await request(instances[0].url, 'POST', '/1.0/survey/response', { token: w, body: data })).status).to.equal(200);
      expect((await request(instances[0].url, 'POST', '/1.0/event', { token: ev, body: [{ type: 'track', user_alias: 'u-del', event_name: 'x' }, { type: 'identify', user_alias: 'u-del', properties: { a: 1 } }] })).status).to.equal(200);
      const del = (path: string, t: string) => request(instances[1].url, 'DELETE', path, { token: t });
      expect((await del(`/1.0/survey/response/${data[0].id}`, w)).body).to.deep.equal({ deleted: 1 });
      expect((await del(`/1.0/respondent/${data[1].respondent_id}`, w)).body).to.deep.equal({ deleted: 2 });
      expect((await del('/1.0/user/u-del', ev)).body).to.deep.equal({ deleted: 3 });
      for (const via of instances) {
        const left = await request(via.url, 'SEARCH', '/1.0/survey/*/response', { token: r, body: { size: 10 } });
        expect(left.body.hits.responses.map((x: { id: string }) => x.id).sort()).to.deep.equal(data.slice(3).map((d) => d.id).sort());
        expect((await request(via.url, 'GET', '/1.0/user/u-del', { token: ev })).status).to.equal(404);
      }
      const counts = await rowsPerShard('survey_responses', org);
      expect(counts[shard]).to.equal(3);
    }
  });

  it('two instances, one token: one rate limit (Redis), not one per instance', async () => {
    const releases = await token(randomUUID(), ['releases']);
    // Sequential requests alternating between the instances. Within one 1-second window the shared
    // counter makes RateLimit-Remaining fall by exactly one per request whichever instance answers
    // (per-instance limits would repeat each value: 9, 9, 8, 8, ...); a new window starts again at
    // 9. After 10 answers in one window, the rest of that window is refused.
    const answers: Array<{ status: number; remaining: number; at: number }> = [];
    for (let i = 0; i < 24; i++) {
      const res = await request(instances[i % 2].url, 'GET', '/1.0/release', { token: releases });
      answers.push({ status: res.status, remaining: Number(res.headers.get('ratelimit-remaining')), at: i % 2 });
    }
    const seen = JSON.stringify(answers.map((a) => `${a.at}:${a.status}:${a.remaining}`));
    const windows: (typeof answers)[] = [];
    for (const a of answers) {
      const w = windows[windows.length - 1];
      const last = w?.[w.length - 1];
      const continues = last && (last.status === 429 ? a.status === 429 : a.status === 429 ? last.remaining === 0 : a.remaining === last.remaining - 1);
      if (continues) w.push(a);
      else windows.push([a]);
    }
    for (const w of windows.slice(1)) expect(w[0].status === 200 && w[0].remaining === 9, `each window starts full: ${seen}`).to.equal(true);
    // Windows that span both instances prove the count is shared; one of them must be long.
    expect(Math.max(...windows.map((w) => w.length)), seen).to.be.greaterThanOrEqual(4);
    for (const w of windows) {
      const answered = w.filter((a) => a.status === 200).length;
      if (w.some((a) => a.status === 429)) expect(answered, seen).to.equal(w[0].remaining + 1);
      expect(answered, seen).to.be.at.most(10);
    }
  });

  it('Redis down: instances keep serving on their own limits and say so in /readyz; back: shared again', async () => {
    const ready = async (i: Instance) => (await request(i.url, 'GET', '/readyz')).body;
    expect((await ready(instances[0])).rate_limits).to.equal('shared');
    redis.kill('SIGKILL');
    const releases = await token(randomUUID(), ['releases']);
    const deadline = Date.now() + 15_000;
    while ((await ready(instances[0])).rate_limits !== 'local (redis unreachable)') {
      if (Date.now() > deadline) throw new Error('readyz never reported the local fallback');
      await sleep(200);
    }
    const res = await request(instances[0].url, 'GET', '/1.0/release', { token: releases });
    expect(res.status).to.equal(200);
    expect((await ready(instances[0])).status).to.equal('ready');
    expect(instances[0].output()).to.include('redis unreachable');
    startRedis();
    const back = Date.now() + 15_000;
    while ((await ready(instances[0])).rate_limits !== 'shared' || (await ready(instances[1])).rate_limits !== 'shared') {
      if (Date.now() > back) throw new Error('readyz never reported shared limits again');
      await sleep(200);
    }
  });

  it('a shard down: its organizations get 503 with Retry-After, the others keep working; back without a restart, nothing lost', async () => {
    const [org1, org2] = [await orgOnShard(0), await orgOnShard(1)];
    const tokens = await Promise.all([org1, org2].map((o) => token(o, ['responses:read', 'responses:write'])));
    for (const [i, t] of tokens.entries()) {
      expect((await request(instances[0].url, 'POST', '/1.0/survey/response', { token: t, body: records(40 + i, 25) })).status).to.equal(200);
    }
    const count = async (via: Instance, t: string) => request(via.url, 'SEARCH', '/1.0/survey/*/response/summary', { token: t, body: {} });
    const before = (await count(instances[0], tokens[1])).body;

    // Shard 2's engine dies (a real SIGKILL); the owning instance brings it back by itself.
    const { pid } = JSON.parse(readFileSync(join(dataDir, 'shard-2', 'engine.json'), 'utf8')) as { pid: number };
    process.kill(pid, 'SIGKILL');
    const down = await count(instances[1], tokens[1]);
    expect(down.status, `${JSON.stringify(down.body)} ${instances[1].output().slice(-3000)}`).to.equal(503);
    expect(down.headers.get('retry-after')).to.match(/^\d+$/);
    // (On a loaded machine a request can time out on its own: a few tries.)
    let other = await count(instances[1], tokens[0]);
    for (let i = 0; i < 3 && other.status !== 200; i++) other = await count(instances[1], tokens[0]);
    expect(other.status, JSON.stringify(other.body)).to.equal(200);
    expect(other.body.nps_groups.total).to.be.greaterThan(0);
    const moreForShard1 = await request(instances[1].url, 'POST', '/1.0/survey/response', { token: tokens[0], body: records(50, 5) });
    expect(moreForShard1.status).to.equal(200);

    const deadline = Date.now() + 90_000;
    for (;;) {
      const res = await count(instances[1], tokens[1]);
      if (res.status === 200) {
        expect(res.body).to.deep.equal(before); // nothing acknowledged was lost
        break;
      }
      expect(res.status, JSON.stringify(res.body)).to.equal(503); // never a 500, never a partial answer
      if (Date.now() > deadline) throw new Error('the shard did not come back');
      await sleep(250);
    }
    for (const via of instances) expect((await count(via, tokens[1])).status).to.equal(200);
  });
});
