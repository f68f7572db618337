import type Router from '@koa/router';
import type { Config } from '../config.ts';
import type { Database } from '../clickhouse/connection.ts';
import type { Logger } from '../log.ts';
import type { TokenCache } from '../tokens/cache.ts';
import type { AuthState } from './auth.ts';
import type { BodyState } from './body.ts';
import type { SharedLimits } from './shared-limits.ts';

/** What every feature's routes get from the app. */
export interface AppDeps {
  config: Config;
  db: Database;
  log: Logger;
  tokens: TokenCache;
  /** REDIS_URL: rate limits shared by every instance. */
  sharedLimits?: SharedLimits;
}

export type AppState = AuthState & BodyState;
export type AppRouter = Router<AppState>;
