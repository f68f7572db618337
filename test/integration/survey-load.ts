import type { ClickHouseClient } from '@clickhouse/client';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { connectDatabase } from '../../src/clickhouse/connection.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { sliceStartSql } from '../../src/responses/rollups/slices.ts';

const BIN = fileURLToPath(new URL('../../bin/tallyhouse.js', import.meta.url));

/** A token of a new organization, minted with the CLI on the service's data directory. */
export async function mintOrgToken(dataDir: string, orgId: string): Promise<string> {
  const minted = await promisify(execFile)(process.execPath, [BIN, 'token', 'create', '--org', orgId, '--scope', 'responses:write,responses:read', '--json'], { env: { ...process.env, DATA_DIR: dataDir } });
  return JSON.parse(minted.stdout).token as string;
}

const HOUR_MS = 3_600_000;
const BASE_MS = Date.UTC(2024, 4, 1);

/** Record i of a survey: created in one of 168 hours (a week), so a batch marks many slices. */
function surveyRecord(orgId: string, survey: string, i: number) {
  const at = new Date(BASE_MS + ((i * 7919) % 168) * HOUR_MS + (i % 3_600_000)).toISOString().replace('Z', '001Z');
  const id = randomUUID();
  return {
    id, doc_type: 'response', org_id: orgId, channel_id: survey, respondent_id: id, respondent_aliases: [], survey_id: survey, scenario_id: survey,
    language: ['en', 'fr', 'de'][i % 3], locale: 'en-US', question_id_path: 'q', question_correlation_id_path: 'qc', action_id_path: 'a', action_correlation_id_path: 'ac',
    group_ids: [], hidden_fields: [], emotions: { fear: null, sadness: null, anger: null, joy: null },
    answers: [{ t: 2, v_d: i % 11, cta_type: 'nps', question_id: survey, question_correlation_id: survey }],
    completion: i % 4 ? 'fully_completed' : 'partially_completed', active: false, end_reason: 'completed', ended_at: '', created_at: at, updated_at: at, last_answer_at: '',
  };
}

/**
 * `loops` clients, each posting batches of `batch` new responses back to back on its own
 * kept-alive connection until stopped or until its connection is refused. `acked`: the ids of
 * every batch answered 200.
 */
export function surveyWriteLoad(url: string, token: string, orgId: string, survey: string, loops: number, batch: number) {
  const acked: string[][] = [];
  const statuses: Array<number | 'connection-error'> = [];
  const agent = new Agent({ keepAlive: true, maxSockets: loops });
  let n = 0;
  let stopped = false;
  const post = (body: string) => new Promise<number | 'connection-error'>((resolve) => {
    const req = httpRequest(`${url}/1.0/survey/response`, { method: 'POST', agent, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
      res.on('error', () => resolve('connection-error'));
    });
    req.on('error', () => resolve('connection-error'));
    req.end(body);
  });
  const done = Promise.all(Array.from({ length: loops }, async () => {
    while (!stopped) {
      const records = Array.from({ length: batch }, () => surveyRecord(orgId, survey, n++));
      const status = await post(JSON.stringify(records));
      statuses.push(status);
      if (status === 200) acked.push(records.map((r) => r.id));
      else if (status === 'connection-error') return;
    }
  })).finally(() => agent.destroy());
  return { acked, statuses, done, stop: () => { stopped = true; return done; } };
}

/** A client on the data directory's engine (the running one, or a new one when none runs), closed after `fn`. */
export async function withEngine<T>(dataDir: string, fn: (client: ClickHouseClient) => Promise<T>): Promise<T> {
  const db = await connectDatabase(loadConfig({ DATA_DIR: dataDir }), createLogger('silent'), { supervise: false });
  try {
    return await fn(db.client());
  } finally {
    await db.close();
  }
}

async function one(client: ClickHouseClient, query: string, params: Record<string, unknown>): Promise<number> {
  const rows = await (await client.query({ query, query_params: params, format: 'JSONEachRow' })).json<Record<string, string>>();
  return Number(Object.values(rows[0])[0]);
}

/** How many of these ids are stored (in chunks: a form field is limited to ~100 KB). */
export async function storedIds(client: ClickHouseClient, orgId: string, ids: readonly string[]): Promise<number> {
  let stored = 0;
  for (let i = 0; i < ids.length; i += 1000) {
    stored += await one(client, 'SELECT count() FROM survey_responses FINAL WHERE org_id = {org:UUID} AND id IN {ids:Array(UUID)}', { org: orgId, ids: ids.slice(i, i + 1000) });
  }
  return stored;
}

/** The org's hour slices whose marks do not sum to 0 (read from the raw table by every reader). */
export const pendingSlices = (client: ClickHouseClient, orgId: string) =>
  one(client, 'SELECT count() FROM (SELECT survey_id, hour FROM survey_rollup_pending WHERE org_id = {org:UUID} GROUP BY survey_id, hour HAVING sum(pending) != 0)', { org: orgId });

/**
 * The hour slices where the rollup and the raw table disagree: per (survey, hour), the responses
 * of survey_responses FINAL against the slice row's total.
 */
export const rollupDiffersFromRaw = (client: ClickHouseClient, orgId: string) =>
  one(client,
    `SELECT count() FROM (SELECT survey_id, ${sliceStartSql('hour', 'created_at')} AS start, count() AS n FROM survey_responses FINAL WHERE org_id = {org:UUID} GROUP BY survey_id, start) AS raw ` +
    "FULL OUTER JOIN (SELECT survey_id, start, t_rows AS n FROM survey_rollup FINAL WHERE org_id = {org:UUID} AND span = 'hour' AND t_rows > 0) AS roll " +
    'ON raw.survey_id = roll.survey_id AND raw.start = roll.start WHERE raw.n != roll.n',
    { org: orgId });

export async function waitFor(cond: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
