import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectDatabase, type Database } from '../../src/clickhouse/connection.ts';
import { findRunningEngine } from '../../src/clickhouse/engine.ts';
import { migrate } from '../../src/clickhouse/migrations.ts';
import { createLogger } from '../../src/log.ts';
import { features } from '../../src/routes.ts';
import { createApp, type App } from '../../src/server/app.ts';
import { TokenCache } from '../../src/tokens/cache.ts';
import { mintToken, type Scope } from '../../src/tokens/tokens.ts';
import { request, startTestService, testConfig, type TestService } from './harness.ts';
import { isoMicros } from './random.ts';

/**
 * Defaults a user's server could have in its profile, each of which changed an answer, dropped
 * data or acknowledged a write before it was stored when the service left it to the server. The
 * engine takes them as command-line settings: they become the default of every query it runs.
 */
const HOSTILE_ENGINE_ARGS = [
  '--optimize_move_to_prewhere_if_final=1',
  '--use_skip_indexes_if_final_exact_mode=0',
  '--do_not_merge_across_partitions_select_final=1',
  '--final=1',
  '--async_insert=1',
  '--wait_for_async_insert=0',
  '--input_format_skip_unknown_fields=1',
  '--input_format_allow_errors_num=1000',
  '--input_format_allow_errors_ratio=1',
  '--date_time_output_format=iso',
  '--output_format_json_quote_64bit_integers=1',
  '--limit=3',
  '--aggregate_functions_null_for_empty=1',
  '--group_by_use_nulls=1',
  '--count_distinct_implementation=uniq',
  '--transform_null_in=1',
  '--session_timezone=Asia/Tokyo',
  '--extremes=1',
];

interface Side {
  url: string;
  tokens: Record<Scope, string>;
  client: ClickHouseClient;
}

const ORG = randomUUID();
const SURVEY = randomUUID();
const QUESTION = randomUUID();
const T0 = Date.UTC(2024, 2, 1);

/** 120 responses, all partially completed (version 1). */
function firstVersions() {
  return Array.from({ length: 120 }, (_, i) => {
    const created = T0 + i * 3_600_000;
    return {
      id: randomUUID(),
      channel_id: randomUUID(),
      respondent_id: randomUUID(),
      survey_id: SURVEY,
      language: i % 2 ? 'en' : 'fr',
      completion: 'partially_completed',
      active: true,
      end_reason: '',
      ended_at: '',
      created_at: isoMicros(created, i),
      updated_at: isoMicros(created, i),
      last_answer_at: isoMicros(created + 60_000),
      hidden_fields: [{ key: 'support', t: 0, v_s: i % 3 ? 'desktop' : 'mobile' }],
      answers: [{ t: 2, v_d: i % 11, cta_type: 'nps', question_id: QUESTION, question_correlation_id: QUESTION }],
    };
  });
}

describe('answers do not depend on the server defaults (pinned settings)', function () {
  this.timeout(180_000);
  let dataDir: string;
  let hostileDb: Database;
  let hostileApp: App;
  let normal: TestService;
  let hostile: Side;
  let reference: Side;
  let bare: ClickHouseClient;

  const mintAll = async (client: ClickHouseClient) => {
    const tokens = {} as Record<Scope, string>;
    for (const scope of ['events', 'releases', 'responses:read', 'responses:write'] as Scope[]) tokens[scope] = (await mintToken(client, ORG, [scope])).token;
    return tokens;
  };

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'tallyhouse-hostile-'));
    const config = { ...testConfig(), dataDir, clickhouse: { ...testConfig().clickhouse, database: 'tallyhouse' } };
    const log = createLogger('silent');
    hostileDb = await connectDatabase(config, log, { supervise: false, engineArgs: HOSTILE_ENGINE_ARGS });
    await migrate(hostileDb);
    const deps = { config, db: hostileDb, log, tokens: new TokenCache() };
    hostileApp = createApp(deps, features(deps));
    hostile = { url: `http://127.0.0.1:${await hostileApp.listen(0, '127.0.0.1')}`, tokens: await mintAll(hostileDb.client()), client: hostileDb.client() };
    normal = await startTestService();
    reference = { url: normal.url, tokens: await mintAll(normal.client), client: normal.client };
    // A client without our settings, as other software on the user's server would query it.
    const endpoint = (await findRunningEngine(dataDir))!;
    bare = createClient({ url: endpoint.url, http_headers: endpoint.headers, database: 'tallyhouse' });
    // Versions of one response stay in separate parts: FINAL has to pick the latest at read time.
    for (const side of [hostile, reference]) await side.client.command({ query: 'SYSTEM STOP MERGES survey_responses' });
  });
  after(async () => {
    await bare?.close();
    await hostileApp?.close();
    await hostileDb?.close();
    await normal?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('the hostile engine really has those defaults (a client without our settings sees them)', async () => {
    const rows = await (await bare.query({ query: 'SELECT number FROM numbers(10)', format: 'JSONEachRow' })).json();
    expect(rows.length, 'limit=3 applies to every query without our settings').to.equal(3);
    const ours = await (await hostile.client.query({ query: 'SELECT number FROM numbers(10)', format: 'JSONEachRow' })).json();
    expect(ours.length).to.equal(10);
  });

  it('a misspelled column fails the INSERT instead of being dropped silently', async () => {
    await hostile.client.command({ query: 'CREATE TABLE IF NOT EXISTS spelling (name String) ENGINE = MergeTree ORDER BY name' });
    await bare.insert({ table: 'spelling', values: [{ nmae: 'x' }], format: 'JSONEachRow' }); // accepted by the server's default
    let error: unknown;
    await hostile.client.insert({ table: 'spelling', values: [{ nmae: 'x' }], format: 'JSONEachRow' }).catch((e) => (error = e));
    expect(String(error)).to.match(/Unknown field|nmae/i);
  });

  it('writes, upserts and reads answer exactly as on an engine with default settings', async () => {
    const v1 = firstVersions();
    // Half of them completed later: a second version in another part.
    const v2 = v1.slice(0, 60).map((r) => ({ ...r, completion: 'fully_completed', updated_at: isoMicros(Date.parse(r.created_at) + 86_400_000) }));
    const events = Array.from({ length: 50 }, (_, i) => ({ type: 'track', event_name: `pinned-${i % 5}`, user_alias: `u${i % 7}`, properties: { n: i } }));
    const releases = Array.from({ length: 5 }, (_, i) => ({ name: `r${i}`, version: `1.${i}`, tags: ['a'], released_at: isoMicros(T0 + i * 86_400_000) }));

    const answers = async (side: Side) => {
      const call = (method: string, path: string, scope: Scope, body?: unknown) => request(side.url, method, path, { token: side.tokens[scope], body });
      // Release ids are random, one per side: the histograms' releases are compared without them.
      const withoutIds = (x: unknown): unknown =>
        Array.isArray(x) ? x.map(withoutIds) : x && typeof x === 'object'
          ? Object.fromEntries(Object.entries(x).map(([k, v]) => [k, k === 'releases' && Array.isArray(v) ? v.map(({ id: _id, ...r }) => r) : withoutIds(v)]))
          : x;
      const strip = (res: { status: number; body: any }) => {
        const { took: _took, ...rest } = res.body ?? {};
        return { status: res.status, body: withoutIds(rest) as any };
      };
      const written = [
        await call('POST', '/1.0/survey/response', 'responses:write', v1),
        await call('POST', '/1.0/survey/response', 'responses:write', v2),
        await call('POST', '/1.0/event', 'events', events),
        ...(await Promise.all(releases.map((r) => call('POST', '/1.0/release', 'releases', r)))),
      ].map((r) => r.status);
      const partial = { filters: [{ type: 'response', key: 'completion', operator: 'eq', value: 'partially_completed' }], size: 1000 };
      const read = {
        written,
        all: strip(await call('SEARCH', `/1.0/survey/${SURVEY}/response`, 'responses:read', { size: 1000 })),
        partial: strip(await call('SEARCH', `/1.0/survey/${SURVEY}/response`, 'responses:read', partial)),
        summary: strip(await call('SEARCH', `/1.0/survey/${SURVEY}/response/summary`, 'responses:read', {})),
        aggregation: strip(
          await call('SEARCH', `/1.0/survey/${SURVEY}/response/aggregation`, 'responses:read', {
            group_by: [{ field: 'completion' }, { field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 10 }],
          }),
        ),
        releases: (await call('GET', '/1.0/release', 'releases')).body.releases.map(({ id: _id, created_at: _c, ...r }: any) => r),
        events: await (
          await side.client.query({ query: "SELECT event_name, count() AS n, uniqExact(user_id) AS users FROM events WHERE startsWith(event_name, 'pinned-') GROUP BY event_name ORDER BY event_name", format: 'JSONEachRow' })
        ).json(),
      };
      return read;
    };

    const got = await answers(hostile);
    const expected = await answers(reference);
    expect(got.written.every((s) => s === 200 || s === 201), String(got.written)).to.equal(true);
    // Independently of the comparison: the latest version of each response, and all of them.
    expect(expected.all.body.hits.total.value).to.equal(120);
    expect(expected.partial.body.hits.total.value).to.equal(60);
    // The histogram without a range lists the releases in the data's span (compared without ids).
    expect(JSON.stringify(expected.aggregation.body)).to.include('"releases"');
    expect(got).to.deep.equal(expected);
  });
});
