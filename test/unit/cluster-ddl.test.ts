import { expect } from 'chai';
import { clusterStatements, createdTables, replicateEngine, type ClusterLayout } from '../../src/clickhouse/cluster-ddl.ts';
import { loadMigrations, statementsFor } from '../../src/clickhouse/migrations.ts';

const layout: ClusterLayout = { cluster: 'c2', database: 'db', replicated: false, keeperPath: '/clickhouse/tables/{shard}/{database}/{table}', onCluster: false };
const tables = new Set(['events', 'user_properties', 'survey_responses', 'api_tokens']);

describe('cluster DDL (CLICKHOUSE_CLUSTER)', () => {
  it('a table becomes <table>_local plus a Distributed <table> sharded by organization', () => {
    const out = clusterStatements('CREATE TABLE IF NOT EXISTS events (org_id UUID, x String) ENGINE = MergeTree ORDER BY (org_id)', tables, layout);
    expect(out).to.deep.equal([
      'CREATE TABLE IF NOT EXISTS events_local (org_id UUID, x String) ENGINE = MergeTree ORDER BY (org_id)',
      'CREATE TABLE IF NOT EXISTS events AS events_local ENGINE = Distributed(c2, db, events_local, cityHash64(org_id))',
    ]);
  });

  it('api_tokens has a full copy on every node (any live node verifies any token); replicated: one copy on all nodes', () => {
    const create = 'CREATE TABLE IF NOT EXISTS api_tokens (id UUID, org_id UUID, token_hash String) ENGINE = ReplacingMergeTree(version) ORDER BY id';
    expect(clusterStatements(create, tables, layout)).to.deep.equal([create]);
    const [replicated] = clusterStatements(create, tables, { ...layout, replicated: true });
    expect(replicated).to.include("ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/all/db/api_tokens', '{replica}', version)");
  });

  it('a table without org_id and without a declared key is refused, naming it', () => {
    expect(() => clusterStatements('CREATE TABLE t (a UInt8) ENGINE = MergeTree ORDER BY a', tables, layout)).to.throw(/table t has no org_id/);
  });

  it('CLICKHOUSE_REPLICATED: Replicated* engines with the Keeper path and the {replica} macro, engine arguments kept', () => {
    const out = clusterStatements('CREATE TABLE IF NOT EXISTS user_properties (org_id UUID, version UInt128) ENGINE = ReplacingMergeTree(version) ORDER BY (org_id)', tables, { ...layout, replicated: true });
    expect(out[0]).to.equal(
      "CREATE TABLE IF NOT EXISTS user_properties_local (org_id UUID, version UInt128) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/db/user_properties_local', '{replica}', version) ORDER BY (org_id)",
    );
    expect(replicateEngine('ENGINE = MergeTree ORDER BY a', 'events', { ...layout, replicated: true })).to.equal(
      "ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/db/events_local', '{replica}') ORDER BY a",
    );
    expect(replicateEngine('ENGINE = ReplacingMergeTree(version, is_deleted) ORDER BY a', 'g', { ...layout, replicated: true })).to.include("'{replica}', version, is_deleted)");
  });

  it('ON CLUSTER when only one node is known', () => {
    const out = clusterStatements('CREATE TABLE IF NOT EXISTS events (org_id UUID) ENGINE = MergeTree ORDER BY org_id', tables, { ...layout, onCluster: true });
    expect(out[0]).to.include('events_local ON CLUSTER c2 ');
    expect(out[1]).to.include('events ON CLUSTER c2 AS events_local');
  });

  it('materialized views run between local tables on every shard', () => {
    const [mv] = clusterStatements('CREATE MATERIALIZED VIEW IF NOT EXISTS user_properties_mv TO user_properties AS SELECT org_id FROM events WHERE type = \'identify\'', tables, layout);
    expect(mv).to.equal("CREATE MATERIALIZED VIEW IF NOT EXISTS user_properties_mv TO user_properties_local AS SELECT org_id FROM events_local WHERE type = 'identify'");
  });

  it('ALTERs go to the local table, and column changes to the Distributed one too', () => {
    expect(clusterStatements('ALTER TABLE survey_responses MODIFY COLUMN a Array(LowCardinality(String))', tables, layout)).to.deep.equal([
      'ALTER TABLE survey_responses_local MODIFY COLUMN a Array(LowCardinality(String))',
      'ALTER TABLE survey_responses MODIFY COLUMN a Array(LowCardinality(String))',
    ]);
    expect(clusterStatements('ALTER TABLE events ADD INDEX i x TYPE minmax', tables, layout)).to.deep.equal(['ALTER TABLE events_local ADD INDEX i x TYPE minmax']);
  });

  it('a column added to the sorting key in one ALTER: the key stays with the local table, the column goes to both', () => {
    expect(clusterStatements('ALTER TABLE events ADD COLUMN IF NOT EXISTS o UUID, MODIFY ORDER BY (org_id, o)', tables, layout)).to.deep.equal([
      'ALTER TABLE events_local ADD COLUMN IF NOT EXISTS o UUID, MODIFY ORDER BY (org_id, o)',
      'ALTER TABLE events ADD COLUMN IF NOT EXISTS o UUID',
    ]);
  });

  it('the rollup owners (no organization) are sharded by owner', () => {
    const out = clusterStatements('CREATE TABLE IF NOT EXISTS survey_rollup_owners (owner UUID, seen DateTime64(3)) ENGINE = ReplacingMergeTree(seen) ORDER BY owner', tables, layout);
    expect(out[1]).to.equal('CREATE TABLE IF NOT EXISTS survey_rollup_owners AS survey_rollup_owners_local ENGINE = Distributed(c2, db, survey_rollup_owners_local, cityHash64(owner))');
  });

  it('backfills (INSERT ... SELECT) copy each shard\'s own rows between local tables', () => {
    expect(clusterStatements('INSERT INTO user_properties SELECT * FROM events', tables, layout)).to.deep.equal(['INSERT INTO user_properties_local SELECT * FROM events_local']);
  });

  it('every migration in schema/ rewrites (a new statement kind must be taught to cluster-ddl.ts)', () => {
    const all = loadMigrations();
    const names = new Set(createdTables(all.flatMap((m) => m.statements)));
    for (const m of all) {
      const out = statementsFor(m, all, layout);
      expect(out.length, m.name).to.be.greaterThanOrEqual(m.statements.length);
      for (const s of out) for (const t of names) expect(s, m.name).not.to.match(new RegExp(`\\bTO ${t}\\b(?!_local)`));
    }
    expect(names.has('survey_responses')).to.equal(true);
  });
});
