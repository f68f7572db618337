/**
 * Write throughput of POST /1.0/survey/response: `clients` connections each sending requests of
 * `recordsPerRequest` new responses back to back, into one organization. Measured into an empty
 * organization and into the bench's large one (same engine, same table, same bodies' shape), so
 * the ratio shows whether a write's cost grows with the organization (the identity lookup, see
 * src/responses/identity.ts).
 *
 * The records look like live traffic: created_at in the last 7 days (the newest partitions),
 * a few hidden fields, an NPS answer and a comment. Every body is built and serialized before the
 * clock starts. They go to one survey of their own (`writeSurveyId`), and are deleted afterwards
 * (lightweight DELETE on both tables), so the query data set stays the one seeded.
 */
import { createHash } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import { round, summarize, type LatencySummary } from '../lib/stats.ts';
import { timedRequest } from './http.ts';
import { responseRecord } from '../responses-write/records.ts';

export interface WriteRun {
  org: 'empty' | 'large';
  org_id: string;
  /** Responses the org held before the run. */
  org_rows_before: number;
  clients: number;
  records_per_request: number;
  requests: number;
  responses: number;
  seconds: number;
  responses_per_second: number;
  /** Latency of one request (1000 records), ms. */
  request_ms: LatencySummary;
}

/** The survey the bench writes into, per org: deleted after the run. */
export function writeSurveyId(orgId: string): string {
  const h = createHash('sha1').update(`tallyhouse-bench-writes:${orgId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

async function orgRows(client: ClickHouseClient, orgId: string): Promise<number> {
  const rs = await client.query({ query: 'SELECT count() AS n FROM survey_responses WHERE org_id = {org:UUID}', query_params: { org: orgId }, format: 'JSONEachRow' });
  return Number((await rs.json<{ n: string }>())[0]?.n ?? 0);
}

export async function measureWrites(opts: {
  url: string;
  client: ClickHouseClient;
  token: string;
  orgId: string;
  org: WriteRun['org'];
  clients: number;
  requests: number;
  recordsPerRequest: number;
}): Promise<WriteRun> {
  const survey = writeSurveyId(opts.orgId);
  const before = await orgRows(opts.client, opts.orgId);
  const now = Date.now();
  const bodies = Array.from({ length: opts.requests }, (_, r) =>
    Array.from({ length: opts.recordsPerRequest }, (_, i) => responseRecord(opts.orgId, survey, now, r * opts.recordsPerRequest + i)),
  );
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: opts.clients }, async () => {
      while (next < bodies.length) {
        const body = bodies[next++];
        const r = await timedRequest(opts.url, 'POST', '/1.0/survey/response', opts.token, body);
        if (r.status !== 200) throw new Error(`POST /1.0/survey/response: HTTP ${r.status} ${r.text.slice(0, 300)}`);
        latencies.push(r.ms);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const responses = opts.requests * opts.recordsPerRequest;
  await deleteWritten(opts.client, opts.orgId);
  return {
    org: opts.org,
    org_id: opts.orgId,
    org_rows_before: before,
    clients: opts.clients,
    records_per_request: opts.recordsPerRequest,
    requests: opts.requests,
    responses,
    seconds: round(seconds, 2),
    responses_per_second: Math.round(responses / seconds),
    request_ms: Object.fromEntries(Object.entries(summarize(latencies)).map(([k, v]) => [k, k === 'count' ? v : round(v)])) as unknown as LatencySummary,
  };
}

/**
 * Removes what was written into the bench's write survey: the responses, their identities, and
 * the survey's rollup rows and pending marks (left behind, the rollups would still count them).
 */
export async function deleteWritten(client: ClickHouseClient, orgId: string): Promise<void> {
  const params = { org: orgId, survey: writeSurveyId(orgId) };
  for (const table of ['survey_responses', 'survey_response_ids', 'survey_rollup', 'survey_rollup_pending']) {
    await client.command({
      query: `DELETE FROM ${table} WHERE org_id = {org:UUID} AND survey_id = {survey:UUID}`,
      query_params: params,
      clickhouse_settings: { lightweight_deletes_sync: '2' },
    });
  }
}
