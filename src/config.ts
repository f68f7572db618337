import { resolve } from 'node:path';

/**
 * CLAIM_FILTER_MAX_BYTES when unset: 256 MiB, about 44 million keys at 6 bytes each
 * (src/claims/filter.ts); also the size a claim view takes when its caller passes none.
 */
export const DEFAULT_CLAIM_FILTER_MAX_BYTES = 256 * 1024 * 1024;

/** USER_NUMBERS_MAX_USERS when unset: 3 million known users, about 256 MiB at BYTES_PER_KNOWN_USER (src/events/user-numbers.ts). */
export const DEFAULT_USER_NUMBERS_MAX_USERS = 3_000_000;

/**
 * The environment, parsed once into a typed config. A bad value stops start-up with a message
 * naming the key, the value and what is allowed (ConfigError).
 */
export interface Config {
  port: number;
  host: string;
  clickhouse: {
    /** Unset: the service starts (or finds) its embedded engine in `dataDir`. */
    url: string | undefined;
    user: string;
    password: string;
    database: string;
    /** Cluster mode: the cluster name in the servers' remote_servers (CLICKHOUSE_CLUSTER). */
    cluster: string | undefined;
    /** Cluster mode: every node's HTTP URL, in shard order (CLICKHOUSE_URLS); empty = ON CLUSTER through `url`. */
    nodeUrls: string[];
    /** Local tables are Replicated* (CLICKHOUSE_REPLICATED=1). */
    replicated: boolean;
    keeperPath: string;
    /** How long start-up waits for CLICKHOUSE_URL to answer before giving up. */
    connectTimeoutMs: number;
  };
  /** Embedded engines to start (TALLYHOUSE_EMBEDDED_SHARDS): 1 = one engine, N > 1 = an N-shard embedded cluster. */
  embeddedShards: number;
  /** Shared state of several service instances (rate limits, the request cache's deletion generation): REDIS_URL. */
  redisUrl: string | undefined;
  /** Whether the first start on an empty embedded data directory creates the demo organization. */
  demo: boolean;
  dataDir: string;
  rateLimits: { eventsPerSecond: number; releasesPerSecond: number; queriesPerSecond: number };
  bodyLimitBytes: number;
  ingest: { batchMaxRows: number; batchDelayMs: number; maxQueuedRows: number; maxQueuedBytes: number; maxQueueWaitMs: number; maxConcurrentFlushes: number };
  /** Open client connections at once; undefined: derived from the process's descriptor limit at start-up. */
  maxConnections: number | undefined;
  logLevel: LogLevel;
  /** How long a token lookup (known or unknown) is cached: the delay before a revocation applies. */
  tokenCacheTtlMs: number;
  /** Token lookups sent to the engine at once; past it, a request with an uncached token gets 503. */
  tokenMaxConcurrentLookups: number;
  /** Bytes each claim view's filter may hold (src/claims/filter.ts, 6 bytes per key); 0: every key is looked up. */
  claimFilterMaxBytes: number;
  /** Known users whose dense numbers each process holds in memory (src/events/user-numbers.ts); 0: every flush looks them up. */
  userNumbersMaxUsers: number;
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export class ConfigError extends Error {
  constructor(key: string, value: string, allowed: string) {
    super(`Invalid ${key}=${JSON.stringify(value)}: expected ${allowed}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function int(env: Env, key: string, fallback: number, min: number, max: number): number {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new ConfigError(key, raw, `an integer from ${min} to ${max}`);
  }
  return n;
}

function str(env: Env, key: string, fallback: string): string {
  const raw = env[key];
  return raw === undefined || raw === '' ? fallback : raw;
}

function oneOf<T extends string>(env: Env, key: string, allowed: readonly T[], fallback: T): T {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new ConfigError(key, raw, `one of ${allowed.join(', ')}`);
  return raw as T;
}

function url(env: Env, key: string): string | undefined {
  const raw = env[key];
  if (raw === undefined || raw === '') return undefined;
  try {
    const u = new URL(raw);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('protocol');
    return raw;
  } catch {
    throw new ConfigError(key, raw, 'an http:// or https:// URL, e.g. http://localhost:8123');
  }
}

function identifier(env: Env, key: string, fallback: string): string {
  const raw = str(env, key, fallback);
  // The database name is an identifier in migrations (CREATE DATABASE): allow-list its characters.
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(raw)) throw new ConfigError(key, raw, 'letters, digits and _ (max 64), not starting with a digit');
  return raw;
}

function optionalIdentifier(env: Env, key: string): string | undefined {
  const raw = env[key];
  if (raw === undefined || raw === '') return undefined;
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(raw)) throw new ConfigError(key, raw, 'letters, digits and _ (max 64), not starting with a digit');
  return raw;
}

function flag(env: Env, key: string): boolean {
  const raw = env[key];
  if (raw === undefined || raw === '' || raw === '0' || raw === 'false') return false;
  if (raw === '1' || raw === 'true') return true;
  throw new ConfigError(key, raw, '1 or 0');
}

function urlList(env: Env, key: string): string[] {
  const raw = env[key];
  if (raw === undefined || raw.trim() === '') return [];
  return raw.split(',').map((part, i) => url({ [`${key}[${i}]`]: part.trim() }, `${key}[${i}]`)!);
}

function redisUrl(env: Env, key: string): string | undefined {
  const raw = env[key];
  if (raw === undefined || raw === '') return undefined;
  try {
    const u = new URL(raw);
    if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw new Error('protocol');
    return raw;
  } catch {
    throw new ConfigError(key, raw, 'a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379');
  }
}

export function loadConfig(env: Env = process.env): Config {
  return {
    port: int(env, 'PORT', 8080, 0, 65535),
    host: str(env, 'HOST', '127.0.0.1'),
    clickhouse: {
      url: url(env, 'CLICKHOUSE_URL'),
      user: str(env, 'CLICKHOUSE_USER', 'default'),
      password: str(env, 'CLICKHOUSE_PASSWORD', ''),
      database: identifier(env, 'CLICKHOUSE_DATABASE', 'tallyhouse'),
      cluster: optionalIdentifier(env, 'CLICKHOUSE_CLUSTER'),
      nodeUrls: urlList(env, 'CLICKHOUSE_URLS'),
      replicated: flag(env, 'CLICKHOUSE_REPLICATED'),
      keeperPath: str(env, 'CLICKHOUSE_KEEPER_PATH', '/clickhouse/tables/{shard}/{database}/{table}'),
      connectTimeoutMs: int(env, 'CLICKHOUSE_CONNECT_TIMEOUT_MS', 5000, 100, 600_000),
    },
    embeddedShards: int(env, 'TALLYHOUSE_EMBEDDED_SHARDS', 1, 1, 16),
    redisUrl: redisUrl(env, 'REDIS_URL'),
    demo: oneOf(env, 'TALLYHOUSE_DEMO', ['0', '1'], '1') === '1',
    dataDir: resolve(str(env, 'DATA_DIR', './data')),
    rateLimits: {
      eventsPerSecond: int(env, 'RATE_LIMIT_EVENTS', 50, 1, 1_000_000),
      releasesPerSecond: int(env, 'RATE_LIMIT_RELEASES', 10, 1, 1_000_000),
      queriesPerSecond: int(env, 'RATE_LIMIT_QUERIES', 20, 1, 1_000_000),
    },
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    ingest: {
      batchMaxRows: int(env, 'INGEST_BATCH_ROWS', 20_000, 1, 1_000_000),
      batchDelayMs: int(env, 'INGEST_BATCH_DELAY_MS', 10, 0, 10_000),
      maxQueuedRows: int(env, 'INGEST_MAX_QUEUED_ROWS', 200_000, 100, 10_000_000),
      maxQueuedBytes: int(env, 'INGEST_MAX_QUEUED_BYTES', 256 * 1024 * 1024, 1024 * 1024, 16 * 1024 * 1024 * 1024),
      maxQueueWaitMs: int(env, 'INGEST_MAX_QUEUE_WAIT_MS', 2000, 1, 600_000),
      maxConcurrentFlushes: int(env, 'INGEST_MAX_CONCURRENT_FLUSHES', 1, 1, 64),
    },
    maxConnections: env.MAX_CONNECTIONS === undefined || env.MAX_CONNECTIONS === '' ? undefined : int(env, 'MAX_CONNECTIONS', 0, 1, 10_000_000),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    tokenCacheTtlMs: int(env, 'TOKEN_CACHE_TTL_MS', 5000, 0, 3_600_000),
    tokenMaxConcurrentLookups: int(env, 'TOKEN_MAX_CONCURRENT_LOOKUPS', 16, 1, 1024),
    claimFilterMaxBytes: int(env, 'CLAIM_FILTER_MAX_BYTES', DEFAULT_CLAIM_FILTER_MAX_BYTES, 0, 64 * 1024 * 1024 * 1024),
    userNumbersMaxUsers: int(env, 'USER_NUMBERS_MAX_USERS', DEFAULT_USER_NUMBERS_MAX_USERS, 0, 1_000_000_000),
  };
}

/** Every key loadConfig reads, with its default, for `--help` (docs/operations.md lists them too). */
export const CONFIG_KEYS: ReadonlyArray<[string, string, string]> = [
  ['PORT', '8080', 'HTTP port of the service'],
  ['HOST', '127.0.0.1', 'interface the service listens on'],
  ['CLICKHOUSE_URL', '(unset)', 'ClickHouse HTTP URL; unset = embedded engine in DATA_DIR'],
  ['CLICKHOUSE_USER', 'default', 'ClickHouse user'],
  ['CLICKHOUSE_PASSWORD', '(empty)', 'ClickHouse password'],
  ['CLICKHOUSE_DATABASE', 'tallyhouse', 'database holding the tables (created by migrations)'],
  ['CLICKHOUSE_CLUSTER', '(unset)', 'cluster mode: the cluster name; tables become <table>_local on every node + Distributed <table>, sharded by organization'],
  ['CLICKHOUSE_URLS', '(unset)', 'cluster mode: every node\'s HTTP URL in shard order (DDL node by node); unset = ON CLUSTER through CLICKHOUSE_URL'],
  ['CLICKHOUSE_REPLICATED', '0', 'cluster mode: 1 = Replicated* local tables ({shard}/{replica} macros)'],
  ['CLICKHOUSE_KEEPER_PATH', '/clickhouse/tables/{shard}/{database}/{table}', 'cluster mode: Keeper path of replicated tables'],
  ['TALLYHOUSE_EMBEDDED_SHARDS', '1', 'embedded engine only: N > 1 starts an N-shard embedded cluster in DATA_DIR (dev and tests)'],
  ['REDIS_URL', '(unset)', 'Redis shared by several service instances: global per-token rate limits and the request cache\'s deletion generation'],
  ['CLICKHOUSE_CONNECT_TIMEOUT_MS', '5000', 'start-up gives up when CLICKHOUSE_URL does not answer within this'],
  ['DATA_DIR', './data', 'embedded engine data directory'],
  ['TALLYHOUSE_DEMO', '1', '0: no demo organization, tokens or data on the first start'],
  ['RATE_LIMIT_EVENTS', '50', 'requests/s per token on POST /1.0/event'],
  ['RATE_LIMIT_RELEASES', '10', 'requests/s per token on /1.0/release'],
  ['RATE_LIMIT_QUERIES', '20', 'requests/s per token on the survey reads together, separately on survey writes, and on the event reads (search, aggregation, user profile) together'],
  ['BODY_LIMIT_BYTES', '1048576', 'request body limit, after gzip decompression'],
  ['INGEST_BATCH_ROWS', '20000', 'group commit: flush when this many rows are queued'],
  ['INGEST_BATCH_DELAY_MS', '10', 'group commit: flush at the latest this long after the oldest waiting request arrived'],
  ['INGEST_MAX_QUEUED_ROWS', '200000', 'ingest queue bound; past it, 503 with Retry-After'],
  ['INGEST_MAX_QUEUED_BYTES', '268435456', 'ingest queue bound in bytes of encoded rows; past it, 503 with Retry-After'],
  ['INGEST_MAX_QUEUE_WAIT_MS', '2000', 'ingest queue bound in time: while the oldest waiting request has waited longer, new ones get 503 with Retry-After'],
  ['INGEST_MAX_CONCURRENT_FLUSHES', '1', 'inserts in flight at once; requests arriving meanwhile go into the next one'],
  ['MAX_CONNECTIONS', '(derived)', 'open client connections at once (more are closed at accept); default: the open-file limit minus a reserve'],
  ['LOG_LEVEL', 'info', 'debug, info, warn, error or silent'],
  ['TOKEN_CACHE_TTL_MS', '5000', 'token lookups (known and unknown) are cached this long: a revoked token stops working within it; 0 = no cache'],
  ['CLAIM_FILTER_MAX_BYTES', '268435456', 'memory of each in-memory claim filter (message ids, Idempotency-Keys, survey-response ids; 6 bytes per key); past it more keys are looked up in the engine; 0 = every key'],
  ['USER_NUMBERS_MAX_USERS', '3000000', 'known users whose dense numbers (unique-user bitmaps) each process holds in memory, ~80 bytes each; an organization past it has its users looked up at each flush with new or unknown users; 0 = always looked up'],
  ['TOKEN_MAX_CONCURRENT_LOOKUPS', '16', 'token lookups sent to the engine at once; past it, a request with a token not in the cache gets 503 + Retry-After'],
];
