import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectDatabase, type Database } from '../../src/clickhouse/connection.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';

/**
 * One real embedded engine for the whole test run, started on first use and stopped by the root
 * hook in hooks.ts. Suites connect to it as a second command would (engine.json in the data dir).
 */
export const TEST_DATA_DIR = join(tmpdir(), `tallyhouse-test-${process.pid}`);
let engineOwner: Promise<Database> | undefined;

export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    DATA_DIR: TEST_DATA_DIR,
    CLICKHOUSE_DATABASE: `t_${randomBytes(6).toString('hex')}`,
    PORT: '0',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // Tests that are not about rate limits must not trip them.
    RATE_LIMIT_EVENTS: '100000',
    RATE_LIMIT_RELEASES: '100000',
    RATE_LIMIT_QUERIES: '100000',
    ...env,
  });
}

export function ensureSharedEngine(): Promise<Database> {
  engineOwner ??= connectDatabase(testConfig(), createLogger('silent'), { supervise: true });
  return engineOwner;
}

export async function stopSharedEngine(): Promise<void> {
  if (engineOwner) await (await engineOwner).close();
  engineOwner = undefined;
  rmSync(TEST_DATA_DIR, { recursive: true, force: true });
}
