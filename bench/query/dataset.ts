/**
 * The bench data set: one organization per size (its id is derived from the size, the surveys and
 * the days, so a later run finds it again), seeded with src/seed only when it does not already
 * hold exactly that many responses. Also reads what the request bodies need from the data (the
 * created_at bounds, a popular segment, the surveys) and the storage state (parts, bytes).
 */
import { createHash } from 'node:crypto';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import type { EngineEndpoint } from '../../src/clickhouse/engine.ts';
import { planSurveys } from '../../src/seed/plan.ts';
import { seedResponses } from '../../src/seed/responses.ts';

export interface DatasetSpec {
  responses: number;
  surveys: number;
  days: number;
}

export interface Dataset extends DatasetSpec {
  orgId: string;
  /** Filled when this run seeded (otherwise the set was reused). */
  seeded?: { seconds: number; responses_per_second: number };
  surveyIds: string[];
  /** question_correlation_id of survey 0's NPS question (the `answer` aggregation). */
  npsQuestionId: string;
  /** The most common segment (group id) of the org. */
  segmentId: string;
  minCreatedAt: string;
  maxCreatedAt: string;
}

/** A UUID (v5-shaped) named by the data set's parameters. */
export function benchOrgId(spec: DatasetSpec): string {
  const h = createHash('sha1').update(`tallyhouse-bench-query:${spec.responses}:${spec.surveys}:${spec.days}`).digest();
  h[6] = (h[6] & 0x0f) | 0x50;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

async function one<T>(client: ClickHouseClient, query: string, params: Record<string, unknown>): Promise<T | undefined> {
  const rs = await client.query({ query, query_params: params, format: 'JSONEachRow' });
  return ((await rs.json()) as T[])[0];
}

/** Rows of the org, without FINAL (seeded ids are unique, so this is the response count). */
export async function orgRowCount(client: ClickHouseClient, orgId: string): Promise<number> {
  const row = await one<{ n: string | number }>(client, 'SELECT count() AS n FROM survey_responses WHERE org_id = {org:UUID}', { org: orgId });
  return Number(row?.n ?? 0);
}

export async function ensureDataset(
  client: ClickHouseClient,
  storage: { endpoint: EngineEndpoint; database: string },
  spec: DatasetSpec,
  log: (line: string) => void,
): Promise<Dataset> {
  const orgId = benchOrgId(spec);
  const have = await orgRowCount(client, orgId);
  let seeded: Dataset['seeded'];
  if (have !== spec.responses) {
    if (have > 0) {
      // An interrupted seed (or a different `now`): start over rather than top up.
      log(`org ${orgId} holds ${have} responses, not ${spec.responses}: deleting them and seeding again`);
      const admin = longClient(storage.endpoint, storage.database);
      try {
        for (const table of ['survey_responses', 'survey_response_ids']) {
          await admin.command({
            query: `ALTER TABLE ${table} DELETE WHERE org_id = {org:UUID}`,
            query_params: { org: orgId },
            clickhouse_settings: { mutations_sync: '2' },
          });
        }
      } finally {
        await admin.close();
      }
    }
    log(`seeding ${spec.responses.toLocaleString('en-US')} responses (${spec.surveys} surveys, ${spec.days} days) into org ${orgId}`);
    let last = 0;
    const result = await seedResponses(client, {
      orgId,
      responses: spec.responses,
      surveys: spec.surveys,
      days: spec.days,
      onProgress: (done, total) => {
        if (Date.now() - last > 5000 || done === total) {
          last = Date.now();
          log(`  seeded ${done.toLocaleString('en-US')} / ${total.toLocaleString('en-US')}`);
        }
      },
    });
    seeded = { seconds: Math.round(result.seconds * 10) / 10, responses_per_second: Math.round(result.inserted / result.seconds) };
    log(`seeded in ${seeded.seconds} s (${seeded.responses_per_second.toLocaleString('en-US')} responses/s)`);
  } else {
    log(`reusing org ${orgId}: it holds ${have.toLocaleString('en-US')} responses`);
  }

  const plan = planSurveys(orgId, 0, spec.surveys);
  const bounds = await one<{ lo: string; hi: string }>(
    client,
    `SELECT toString(min(created_at)) AS lo, toString(max(created_at)) AS hi FROM survey_responses WHERE org_id = {org:UUID}`,
    { org: orgId },
  );
  // The busiest segment, from a sample of the newest rows (cheap even on 10M).
  const seg = await one<{ g: string }>(
    client,
    `SELECT g FROM (SELECT group_ids FROM survey_responses WHERE org_id = {org:UUID} ORDER BY created_at DESC LIMIT 20000)
     ARRAY JOIN group_ids AS g GROUP BY g ORDER BY count() DESC, g LIMIT 1`,
    { org: orgId },
  );
  return {
    ...spec,
    orgId,
    seeded,
    surveyIds: plan.map((s) => s.id),
    npsQuestionId: plan[0].questionCorrelationIds[0],
    segmentId: seg?.g ?? '00000000-0000-0000-0000-000000000000',
    minCreatedAt: bounds!.lo,
    maxCreatedAt: bounds!.hi,
  };
}

export interface StorageState {
  table_rows: number;
  org_rows: number;
  active_parts: number;
  /** Active parts per partition (week of created_at). */
  parts_per_partition: Record<string, number>;
  compressed_bytes: number;
  uncompressed_bytes: number;
  merges_running: number;
  /** Compressed bytes per column, largest first (top 8). */
  column_bytes: Record<string, number>;
}

export async function storageState(client: ClickHouseClient, orgRows: number): Promise<StorageState> {
  const q = async <T>(query: string) => (await (await client.query({ query, format: 'JSONEachRow' })).json()) as T[];
  const db = 'currentDatabase()';
  const [parts] = await q<{ rows: string; parts: string; c: string; u: string }>(
    `SELECT sum(rows) AS rows, count() AS parts, sum(data_compressed_bytes) AS c, sum(data_uncompressed_bytes) AS u
     FROM system.parts WHERE database = ${db} AND table = 'survey_responses' AND active`,
  );
  const perPartition = await q<{ partition: string; n: string }>(
    `SELECT partition, count() AS n FROM system.parts WHERE database = ${db} AND table = 'survey_responses' AND active
     GROUP BY partition ORDER BY partition`,
  );
  const [merges] = await q<{ n: string }>(`SELECT count() AS n FROM system.merges WHERE database = ${db} AND table = 'survey_responses'`);
  const columns = await q<{ name: string; b: string }>(
    `SELECT column AS name, sum(column_data_compressed_bytes) AS b FROM system.parts_columns
     WHERE database = ${db} AND table = 'survey_responses' AND active GROUP BY column ORDER BY sum(column_data_compressed_bytes) DESC LIMIT 8`,
  );
  return {
    table_rows: Number(parts?.rows ?? 0),
    org_rows: orgRows,
    active_parts: Number(parts?.parts ?? 0),
    parts_per_partition: Object.fromEntries(perPartition.map((p) => [p.partition, Number(p.n)])),
    compressed_bytes: Number(parts?.c ?? 0),
    uncompressed_bytes: Number(parts?.u ?? 0),
    merges_running: Number(merges?.n ?? 0),
    column_bytes: Object.fromEntries(columns.map((c) => [c.name, Number(c.b)])),
  };
}

/** A client for statements that run minutes on 10M rows (the service's clients give up after 60 s). */
function longClient(endpoint: EngineEndpoint, database: string): ClickHouseClient {
  // Loopback: no load balancer to time out an idle connection, so no progress headers needed (and the
  // client's warning about them is turned off with its logger).
  return createClient({ url: endpoint.url, http_headers: endpoint.headers, database, request_timeout: 3_600_000, log: { level: ClickHouseLogLevel.OFF } });
}

/**
 * OPTIMIZE ... FINAL: one part per partition (the state once background merges have caught up;
 * partitions already in one part are skipped).
 */
export async function optimizeFinal(endpoint: EngineEndpoint, database: string, table: 'survey_responses' | 'survey_rollup' | 'survey_rollup_answers' = 'survey_responses'): Promise<number> {
  const client = longClient(endpoint, database);
  const t0 = performance.now();
  try {
    await client.command({ query: `OPTIMIZE TABLE ${table} FINAL`, clickhouse_settings: { optimize_skip_merged_partitions: 1 } });
  } finally {
    await client.close();
  }
  return (performance.now() - t0) / 1000;
}
