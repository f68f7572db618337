import type { Database } from '../../src/clickhouse/connection.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { features } from '../../src/routes.ts';
import { withOps } from '../../src/server/app.ts';
import type { Route } from '../../src/server/route.ts';
import { TokenCache } from '../../src/tokens/cache.ts';

/**
 * Every route of the app, as the router and the OpenAPI document see them, without a database:
 * reading the table runs no handler, so the database is a stand-in that fails if touched.
 */
export function allRoutes(): Route[] {
  const db = new Proxy({}, { get: () => { throw new Error('the route table must not touch the database'); } }) as Database;
  const deps = { config: loadConfig({}), db, log: createLogger('silent'), tokens: new TokenCache() };
  return withOps(deps, features(deps)).flatMap((f) => f.routes);
}
