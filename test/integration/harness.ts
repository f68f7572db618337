import type { ClickHouseClient } from '@clickhouse/client';
import { randomUUID } from 'node:crypto';
import { connectDatabase, type Database } from '../../src/clickhouse/connection.ts';
import { migrate } from '../../src/clickhouse/migrations.ts';
import type { Config } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { createApp } from '../../src/server/app.ts';
import { features } from '../../src/routes.ts';
import { TokenCache } from '../../src/tokens/cache.ts';
import { mintToken, type Scope } from '../../src/tokens/tokens.ts';
import { ensureSharedEngine, testConfig } from './shared-engine.ts';

export { TEST_DATA_DIR, testConfig } from './shared-engine.ts';

/**
 * Integration tests share one real embedded engine (shared-engine.ts); every suite gets a fresh
 * database on it, migrations applied, and its own app listening on a random loopback port.
 */
const quiet = createLogger('silent');

export interface TestResponse {
  status: number;
  headers: Headers;
  body: any;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  rawBody?: Buffer | string;
  headers?: Record<string, string>;
}

export interface TestService {
  url: string;
  database: string;
  client: ClickHouseClient;
  db: Database;
  orgId: string;
  config: Config;
  /** The app's token cache (its stats count the token queries sent to the engine). */
  tokens: TokenCache;
  token(scopes: Scope[] | string[], orgId?: string): Promise<string>;
  request(method: string, path: string, opts?: RequestOptions): Promise<TestResponse>;
  /** Waits for the background work of the writes so far (rollup recomputes). */
  settle(): Promise<void>;
  close(): Promise<void>;
}

export async function request(baseUrl: string, method: string, path: string, opts: RequestOptions = {}): Promise<TestResponse> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: Buffer | string | undefined = opts.rawBody;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(baseUrl + path, { method, headers, body: body as BodyInit | undefined });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    /* not JSON: keep the text */
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** env: config keys as environment variables, e.g. { RATE_LIMIT_EVENTS: '5' }. */
export async function startTestService(env: Record<string, string> = {}): Promise<TestService> {
  await ensureSharedEngine();
  const config = testConfig(env);
  const db = await connectDatabase(config, quiet, { supervise: false });
  await migrate(db);
  const tokens = new TokenCache(config.tokenCacheTtlMs, config.tokenMaxConcurrentLookups);
  const deps = { config, db, log: createLogger(config.logLevel), tokens };
  const feats = features(deps);
  const app = createApp(deps, feats);
  const port = await app.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${port}`;
  const orgId = randomUUID();
  return {
    url,
    database: config.clickhouse.database,
    client: db.client(),
    db,
    orgId,
    config,
    tokens,
    token: async (scopes, org = orgId) => (await mintToken(db, org, scopes as Scope[])).token,
    request: (method, path, opts) => request(url, method, path, opts),
    settle: async () => {
      await Promise.all(feats.map((f) => f.settle?.()));
    },
    close: async () => {
      await app.close();
      await db.adminClient().command({ query: `DROP DATABASE IF EXISTS ${config.clickhouse.database}` });
      await db.close();
    },
  };
}
