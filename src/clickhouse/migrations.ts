import { readdirSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Database } from './connection.ts';

export const SCHEMA_DIR = fileURLToPath(new URL('../../schema/', import.meta.url));

export interface Migration {
  version: number;
  name: string;
  statements: string[];
  checksum: string;
}

/** `schema/NNN-name.sql`, in order. Statements end with `;` at the end of a line. */
export function loadMigrations(dir = SCHEMA_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{3}-[\w-]+\.sql$/.test(f))
    .sort()
    .map((file) => {
      const text = readFileSync(dir + file, 'utf8');
      return {
        version: Number(file.slice(0, 3)),
        name: file.replace(/\.sql$/, ''),
        statements: splitStatements(text),
        checksum: createHash('sha256').update(text).digest('hex'),
      };
    });
}

export function splitStatements(sql: string): string[] {
  const withoutComments = sql
    .split('\n')
    .filter((line) => !line.trim().startsWith('--'))
    .join('\n');
  return withoutComments
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/**
 * Applies the migrations not yet recorded, in order. Every statement is idempotent
 * (`IF NOT EXISTS`), so two processes migrating at once, or a run interrupted half-way, are safe
 * to (re)run.
 */
export async function migrate(db: Database, migrations = loadMigrations()): Promise<string[]> {
  await db.adminClient().command({ query: `CREATE DATABASE IF NOT EXISTS ${db.name}` }); // name allow-listed in config.ts
  const client = db.client();
  await client.command({
    query: `CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, checksum String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3))
            ENGINE = ReplacingMergeTree ORDER BY version`,
  });
  const applied = new Set(await appliedVersions(db));
  const done: string[] = [];
  for (const m of migrations) {
    if (applied.has(m.version)) continue;
    for (const statement of m.statements) await client.command({ query: statement });
    await client.insert({ table: 'schema_migrations', values: [{ version: m.version, name: m.name, checksum: m.checksum }], format: 'JSONEachRow' });
    done.push(m.name);
  }
  return done;
}

export async function appliedVersions(db: Database): Promise<number[]> {
  const rs = await db.client().query({ query: 'SELECT DISTINCT version FROM schema_migrations ORDER BY version', format: 'JSONEachRow' });
  return (await rs.json<{ version: number }>()).map((r) => r.version);
}

/** True when every migration in schema/ is recorded: /readyz uses it. */
export async function migrationsApplied(db: Database, migrations = loadMigrations()): Promise<boolean> {
  try {
    const applied = new Set(await appliedVersions(db));
    return migrations.every((m) => applied.has(m.version));
  } catch {
    return false;
  }
}
