/**
 * Cluster mode DDL: the migrations in schema/ are written for one node; this rewrites each
 * statement for a sharded cluster, so that one set of migrations serves both.
 *
 * Every table `t` becomes:
 * - `t_local` on every node: the table as written (or its Replicated* twin, CLICKHOUSE_REPLICATED,
 *   with the `{shard}` / `{replica}` macros and a configurable Keeper path);
 * - `t`, a Distributed table over the `t_local` of every shard, sharded by organization
 *   (`cityHash64(org_id)`), so all rows of one organization live on one shard and every query of
 *   one organization (FINAL, upserts, rollups, dedup, joins with its other tables) is exact there.
 * The service keeps reading and writing `t`: nothing else changes names.
 * Materialized views are created on every node between local tables (an INSERT that the
 * Distributed table forwards to a shard fires the views of that shard, which write to the same
 * shard: same organization). ALTERs go to the local tables, and column changes to the Distributed
 * table too. INSERT ... SELECT (backfills) runs on every node between local tables.
 *
 * Pure: statements in, statements out; the migration runner (migrations.ts) executes them, node
 * by node, or once with ON CLUSTER where the server supports it.
 */

export interface ClusterLayout {
  /** The cluster name in the servers' remote_servers config. */
  cluster: string;
  database: string;
  /** Local tables are Replicated* (real servers with Keeper). */
  replicated: boolean;
  /** Keeper path of a replicated table; `{table}` and `{database}` are filled here, `{shard}` by the server. */
  keeperPath: string;
  /** Emit `ON CLUSTER <name>` (executed once, the server fans out) rather than node by node. */
  onCluster: boolean;
}

/**
 * Tables not sharded by organization: their sharding key. The rollup maintainers' heartbeats
 * (schema/130) belong to no organization; each process's rows live on one shard, and every reader
 * reads them all through the Distributed table.
 */
const SHARD_KEYS: Record<string, string> = { survey_rollup_owners: 'cityHash64(owner)' };

/**
 * Tables with a full copy on every node, not sharded. API tokens are read before anyone knows the
 * organization, on every request: sharded, a shard being down would lock out the tokens stored on
 * it whatever their organization's shard; a full copy lets any live node verify any token. Their
 * writes (mint, revoke: rare) go to every node (src/tokens/tokens.ts) and fail while one is down;
 * replicated clusters keep one copy replicated to every node (a Keeper path without {shard}).
 */
export const EVERY_NODE = new Set(['api_tokens']);

export const localName = (table: string) => `${table}_local`;

/** An `org_id` column in a CREATE TABLE: a UUID, or a LowCardinality(UUID) (as schema/281 makes survey_responses'). */
export const ORG_ID_COLUMN = /\borg_id\s+(?:UUID\b|LowCardinality\s*\(\s*UUID\s*\))/i;

export class ClusterDdlError extends Error {}

/** The sharded tables a set of statements creates (to rewrite references to them). */
export function createdTables(statements: readonly string[]): string[] {
  return statements.flatMap((s) => {
    const m = /^\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)/i.exec(s);
    return m ? [m[1]] : [];
  });
}

/**
 * The statements to run for one migration statement, in order. `tables` are every table of the
 * schema (their references in views and INSERT ... SELECT are rewritten to the local tables).
 */
export function clusterStatements(statement: string, tables: ReadonlySet<string>, layout: ClusterLayout): string[] {
  const s = statement.trim();
  const on = layout.onCluster ? ` ON CLUSTER ${layout.cluster}` : '';
  let m: RegExpExecArray | null;

  if ((m = /^CREATE\s+TABLE\s+(IF\s+NOT\s+EXISTS\s+)?(\w+)\s*([\s\S]*)$/i.exec(s))) {
    const [, ifNotExists = '', table, rest] = m;
    if (EVERY_NODE.has(table)) {
      const everywhere = { ...layout, keeperPath: layout.keeperPath.replace(/\{shard\}/g, 'all') };
      return [`CREATE TABLE ${ifNotExists}${table}${on} ${layout.replicated ? replicateEngine(rest, table, everywhere, table) : rest}`];
    }
    const shardKey = SHARD_KEYS[table] ?? (ORG_ID_COLUMN.test(rest) ? 'cityHash64(org_id)' : undefined);
    if (!shardKey) {
      throw new ClusterDdlError(`table ${table} has no org_id column and no sharding key in cluster-ddl.ts SHARD_KEYS: say how it is sharded`);
    }
    const local = `CREATE TABLE ${ifNotExists}${localName(table)}${on} ${layout.replicated ? replicateEngine(rest, table, layout) : rest}`;
    const distributed =
      `CREATE TABLE ${ifNotExists}${table}${on} AS ${localName(table)} ` +
      `ENGINE = Distributed(${layout.cluster}, ${layout.database}, ${localName(table)}, ${shardKey})`;
    return [local, distributed];
  }

  if ((m = /^CREATE\s+MATERIALIZED\s+VIEW\s+(IF\s+NOT\s+EXISTS\s+)?(\w+)\s+TO\s+(\w+)\s+([\s\S]*)$/i.exec(s))) {
    const [, ifNotExists = '', view, target, rest] = m;
    return [`CREATE MATERIALIZED VIEW ${ifNotExists}${view}${on} TO ${localTarget(target, tables)} ${localReferences(rest, tables)}`];
  }

  if ((m = /^ALTER\s+TABLE\s+(\w+)\s+([\s\S]*)$/i.exec(s))) {
    const [, table, rest] = m;
    if (!tables.has(table) || EVERY_NODE.has(table)) return [`ALTER TABLE ${table}${on} ${rest}`];
    const out = [`ALTER TABLE ${localName(table)}${on} ${localJoinGets(rest, tables)}`];
    // The Distributed table mirrors the columns (not indexes, projections, TTLs, sorting keys or
    // mutations): a new column's sorting key (`ADD COLUMN c ..., MODIFY ORDER BY (..., c)`, one
    // statement as the engine requires) stays with the local table.
    if (/^\s*(ADD|DROP|MODIFY|RENAME|COMMENT)\s+COLUMN\b/i.test(rest)) {
      out.push(`ALTER TABLE ${table}${on} ${rest.replace(/,\s*MODIFY\s+ORDER\s+BY\s*\([^()]*\)\s*$/i, '')}`);
    }
    return out;
  }

  if ((m = /^(INSERT\s+INTO\s+)(\w+)([\s\S]*)$/i.exec(s))) {
    const [, head, table, rest] = m;
    // ON CLUSTER cannot carry an INSERT: once, through the Distributed tables (rows go to their shard).
    if (layout.onCluster) return [s];
    // Node by node: each shard copies its own organizations between its local tables.
    return [`${head}${localTarget(table, tables)}${localReferences(rest, tables)}`];
  }

  if ((m = /^OPTIMIZE\s+TABLE\s+(\w+)([\s\S]*)$/i.exec(s))) {
    return [`OPTIMIZE TABLE ${localTarget(m[1], tables)}${on}${m[2]}`];
  }

  if ((m = /^DROP\s+(TABLE|VIEW)\s+(IF\s+EXISTS\s+)?(\w+)([\s\S]*)$/i.exec(s))) {
    const [, kind, ifExists = '', name, rest] = m;
    if (kind.toUpperCase() === 'TABLE' && tables.has(name)) {
      return [`DROP TABLE ${ifExists}${name}${on}${rest}`, `DROP TABLE ${ifExists}${localName(name)}${on}${rest}`];
    }
    return [`DROP ${kind} ${ifExists}${name}${on}${rest}`];
  }

  if ((m = /^(EXCHANGE\s+TABLES|RENAME\s+TABLE)\s+(\w+)\s+(AND|TO)\s+(\w+)\s*$/i.exec(s))) {
    const [, verb, a, joiner, b] = m;
    if (!tables.has(a) && !tables.has(b)) return [s];
    // Swap (or rename) the data; the Distributed tables keep pointing at the local names.
    const out = [`${verb} ${localName(a)} ${joiner} ${localName(b)}${on}`];
    if (/^RENAME/i.test(verb)) out.push(`RENAME TABLE ${a} TO ${b}${on}`);
    return out;
  }

  throw new ClusterDdlError(`cluster mode cannot rewrite this statement (extend src/clickhouse/cluster-ddl.ts): ${s.slice(0, 120)}`);
}

/** `ENGINE = X(args) ...` -> `ENGINE = ReplicatedX('<path>', '{replica}', args) ...`. */
export function replicateEngine(rest: string, table: string, layout: ClusterLayout, stored = localName(table)): string {
  const m = /ENGINE\s*=\s*(\w*MergeTree)(\s*\(([^()]*)\))?/i.exec(rest);
  if (!m) throw new ClusterDdlError(`table ${table}: only *MergeTree engines can be replicated`);
  const path = layout.keeperPath.replaceAll('{database}', layout.database).replaceAll('{table}', stored);
  const args = [`'${path}'`, `'{replica}'`, ...(m[3]?.trim() ? [m[3].trim()] : [])];
  return rest.slice(0, m.index) + `ENGINE = Replicated${m[1]}(${args.join(', ')})` + rest.slice(m.index + m[0].length);
}

function localTarget(table: string, tables: ReadonlySet<string>): string {
  return tables.has(table) && !EVERY_NODE.has(table) ? localName(table) : table;
}

/**
 * joinGet('[{database}.]t', ...) of a schema table -> its local table: a mutation of a local table runs on its
 * node, where the Join table of the same organizations is the local one (a backfill, schema/231).
 */
function localJoinGets(sql: string, tables: ReadonlySet<string>): string {
  return sql.replace(/\bjoinGet\('((?:\{database\}\.)?)(\w+)'/g, (whole, db: string, name: string) => (tables.has(name) && !EVERY_NODE.has(name) ? `joinGet('${db}${localName(name)}'` : whole));
}

/** FROM t / JOIN t / IN t of a schema table -> its local table (inside views and backfills). */
function localReferences(sql: string, tables: ReadonlySet<string>): string {
  return sql.replace(/\b(FROM|JOIN)(\s+)(\w+)\b/gi, (whole, kw: string, space: string, name: string) =>
    tables.has(name) && !EVERY_NODE.has(name) ? `${kw}${space}${localName(name)}` : whole,
  );
}
