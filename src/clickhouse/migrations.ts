import { readdirSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { ClickHouseClient } from '@clickhouse/client';
import { clusterStatements, createdTables, type ClusterLayout } from './cluster-ddl.ts';
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
 * The statements of a migration as one node runs them: as written on a single node; rewritten for
 * the cluster layout otherwise (cluster-ddl.ts: `<table>_local` + Distributed `<table>`).
 */
export function statementsFor(m: Migration, all: readonly Migration[], layout: ClusterLayout | undefined): string[] {
  if (!layout) return m.statements;
  const tables = new Set(createdTables(all.flatMap((x) => x.statements)));
  return m.statements.flatMap((s) => clusterStatements(s, tables, layout));
}

/**
 * `{database}` in a statement -> the service's database: for what the engine resolves outside the
 * statement's session, where no database is current (a table named in a mutation's joinGet).
 */
export function withDatabase(statement: string, database: string): string {
  return statement.replaceAll('{database}', database);
}

const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, checksum String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3))
            ENGINE = ReplacingMergeTree ORDER BY version`;

/**
 * Applies the migrations not yet recorded, in order. Every statement is idempotent
 * (`IF NOT EXISTS`), so two processes migrating at once, or a run interrupted half-way, are safe
 * to (re)run. In cluster mode each node gets the rewritten statements and keeps its own record
 * (`schema_migrations` is a plain table on every node), node by node, or once through ON CLUSTER
 * when only one node's URL is known (the server fans the DDL out).
 */
export async function migrate(db: Database, migrations = loadMigrations()): Promise<string[]> {
  const layout = db.cluster?.layout;
  const targets = db.cluster && !layout?.onCluster ? db.cluster.nodes() : [{ client: db.client(), admin: db.adminClient() }];
  const done = new Set<string>();
  for (const node of targets) {
    for (const name of await migrateNode(node, db.name, migrations, layout)) done.add(name);
  }
  return [...done];
}

async function migrateNode(node: { client: ClickHouseClient; admin: ClickHouseClient }, database: string, migrations: readonly Migration[], layout: ClusterLayout | undefined): Promise<string[]> {
  const on = layout?.onCluster ? ` ON CLUSTER ${layout.cluster}` : '';
  await node.admin.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}${on}` }); // name allow-listed in config.ts
  await node.client.command({ query: MIGRATIONS_TABLE });
  const applied = new Set(await appliedVersionsOf(node.client));
  const done: string[] = [];
  for (const m of migrations) {
    if (applied.has(m.version)) continue;
    for (const statement of statementsFor(m, migrations, layout)) await node.client.command({ query: withDatabase(statement, database) });
    await node.client.insert({ table: 'schema_migrations', values: [{ version: m.version, name: m.name, checksum: m.checksum }], format: 'JSONEachRow' });
    done.push(m.name);
  }
  return done;
}

async function appliedVersionsOf(client: ClickHouseClient): Promise<number[]> {
  const rs = await client.query({ query: 'SELECT DISTINCT version FROM schema_migrations ORDER BY version', format: 'JSONEachRow' });
  return (await rs.json<{ version: number }>()).map((r) => r.version);
}

export async function appliedVersions(db: Database): Promise<number[]> {
  return appliedVersionsOf(db.client());
}

/** True when every migration in schema/ is recorded (on every node in cluster mode): /readyz uses it. */
export async function migrationsApplied(db: Database, migrations = loadMigrations()): Promise<boolean> {
  try {
    const clients = db.cluster && !db.cluster.layout.onCluster ? db.cluster.nodes().map((n) => n.client) : [db.client()];
    for (const client of clients) {
      const applied = new Set(await appliedVersionsOf(client));
      if (!migrations.every((m) => applied.has(m.version))) return false;
    }
    return true;
  } catch {
    return false;
  }
}
