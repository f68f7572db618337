import { expect } from 'chai';
import { clusterStatements, type ClusterLayout } from '../../src/clickhouse/cluster-ddl.ts';

const layout: ClusterLayout = { cluster: 'c2', database: 'db', replicated: false, keeperPath: '/clickhouse/tables/{shard}/{database}/{table}', onCluster: false };

describe('cluster DDL: the org_id column finds tenant tables', () => {
  it('a table whose org_id is LowCardinality(UUID) (schema/281) is sharded by organization like one whose org_id is a UUID', () => {
    const tables = new Set(['survey_responses']);
    for (const type of ['UUID', 'LowCardinality(UUID)', 'LowCardinality( UUID )']) {
      const out = clusterStatements(`CREATE TABLE IF NOT EXISTS survey_responses (org_id ${type}, id UUID) ENGINE = MergeTree ORDER BY (org_id, id)`, tables, layout);
      expect(out[1], type).to.equal('CREATE TABLE IF NOT EXISTS survey_responses AS survey_responses_local ENGINE = Distributed(c2, db, survey_responses_local, cityHash64(org_id))');
    }
  });

  it('org_id of another type, or a column only named like it, is no organization column: the table is refused', () => {
    for (const columns of ['org_id String', 'org_ids Array(UUID)', 'owner_org_id UUID', 'org_id LowCardinality(String)']) {
      expect(() => clusterStatements(`CREATE TABLE t (${columns}) ENGINE = MergeTree ORDER BY tuple()`, new Set(['t']), layout), columns).to.throw(/table t has no org_id/);
    }
  });
});
