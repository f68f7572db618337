/**
 * Synthetic survey responses, generated inside ClickHouse (see sql.ts): the data never crosses
 * the wire, so ten million rows take minutes on a small machine. Work is cut into chunks of rows
 * so that progress can be reported and no single statement runs long enough to hit a timeout.
 */
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { availableParallelism } from 'node:os';
import { planParams, planSurveys } from './plan.ts';
import { SEED_IDS_SQL, SEED_INSERT_SQL } from './sql.ts';
import { formatDb, fromMillis, parseInstantMicros } from '../time/iso.ts';
import { MICROS_PER_DAY } from '../query/histogram.ts';
import { withOrgMaintenance } from '../responses/rollups/maintain.ts';
import { UUID_PATTERN } from '../uuid.ts';

export interface SeedOptions {
  orgId: string;
  responses: number;
  /** Number of surveys (default 5). */
  surveys?: number;
  /** created_at spans this many calendar days ending at `now` (default 90). */
  days?: number;
  /**
   * Surveys, respondents and groups depend on org + seed only (default 0). The responses depend on
   * org + seed + counts + `now`: the same four give the same rows (ids included), another `now`
   * gives new responses from the same people.
   */
  seed?: number;
  /** End of the created_at window (default: the current time). */
  now?: Date;
  /**
   * The respondents' customer-side aliases are `user-<n>@example.com`, n in 1..respondents
   * (default about 0.6 per response); `eventUsers` makes them `user-<n>`, the users of the event
   * seed (src/seed/events.ts), so the same people answer surveys and send events.
   */
  respondents?: number;
  eventUsers?: boolean;
  onProgress?: (done: number, total: number) => void;
}

export interface SeedResult {
  inserted: number;
  seconds: number;
  surveyIds: string[];
}

export const SEED_LIMITS = {
  responses: { min: 1, max: 100_000_000 },
  surveys: { min: 1, max: 100 },
  days: { min: 1, max: 3650 },
  seed: { min: 0, max: Number.MAX_SAFE_INTEGER },
} as const;

const FIRST_CHUNK_ROWS = 100_000;
const MAX_CHUNK_ROWS = 1_000_000;
const CHUNK_TARGET_SECONDS = 10;
const INSERT_THREADS = Math.max(1, Math.min(8, availableParallelism()));

/** Respondents answer more than once: about 0.6 distinct respondents per response. */
export const respondentPool = (responses: number) => Math.max(1, Math.round(responses * 0.6));
/** Groups (accounts, segments): about one per 40 respondents, within 3..5000. */
export const groupPool = (responses: number) => Math.min(5000, Math.max(3, Math.round(respondentPool(responses) / 40)));

/** 'YYYY-MM-DD HH:MM:SS.ffffff' in UTC, the DateTime64(6) parameter text (src/time/iso.ts's formatDb). */
export function toDateTime64Param(date: Date): string {
  return formatDb(fromMillis(date.getTime()));
}

function checkRange(name: keyof typeof SEED_LIMITS, value: number) {
  const { min, max } = SEED_LIMITS[name];
  if (!Number.isSafeInteger(value) || value < min || value > max) throw new RangeError(`${name} must be an integer from ${min} to ${max}, got ${value}`);
}

const SEED_SETTINGS: ClickHouseSettings = {
  // Progress headers keep the connection busy, so a long chunk never meets the idle timeout.
  send_progress_in_http_headers: 1,
  http_headers_progress_interval_ms: '5000',
  // One part per partition touched: weekly partitions, so a 10-year span (the --days maximum) is ~523.
  max_partitions_per_insert_block: '1000',
  // Ids are unique hashes, so the insert-time dedup pass of ReplacingMergeTree would find
  // nothing; skipping it saves about a third of the CPU of the write.
  optimize_on_insert: 0,
  // Generate and write on every core.
  max_insert_threads: String(INSERT_THREADS),
  // toJSONString then escapes like JSON.stringify ("a/b", not "a\\/b"): `doc` is byte for byte
  // what POST /1.0/survey/response would store for the same record.
  output_format_json_escape_forward_slashes: 0,
};

export async function seedResponses(client: ClickHouseClient, options: SeedOptions): Promise<SeedResult> {
  const { orgId, responses, surveys = 5, days = 90, seed = 0, now = new Date(), onProgress } = options;
  if (!UUID_PATTERN.test(orgId)) throw new RangeError(`orgId must be a UUID, got ${JSON.stringify(orgId)}`);
  checkRange('responses', responses);
  checkRange('surveys', surveys);
  checkRange('days', days);
  checkRange('seed', seed);
  if (Number.isNaN(now.getTime())) throw new RangeError('now must be a valid date');
  if (options.respondents !== undefined && !(Number.isSafeInteger(options.respondents) && options.respondents >= 1)) throw new RangeError(`respondents must be a positive integer, got ${options.respondents}`);

  const plan = planSurveys(orgId.toLowerCase(), seed, surveys);
  const base = {
    ...planParams(orgId.toLowerCase(), seed, plan),
    respondents: options.respondents ?? respondentPool(responses),
    ...(options.eventUsers ? { aliasDomain: '' } : {}),
    groups: groupPool(responses),
    now: toDateTime64Param(now),
    days,
  };

  const started = performance.now();
  let done = 0;
  const writeChunks = async () => {
    // Chunks grow to about CHUNK_TARGET_SECONDS each.
    let chunk = Math.min(FIRST_CHUNK_ROWS, responses);
    while (done < responses) {
      const count = Math.min(chunk, responses - done);
      const t0 = performance.now();
      // Identities first (schema/030): a chunk whose rows fail after them leaves identities that a
      // rerun of the same chunk agrees with; rows without their identity could be stored twice.
      await client.command({ query: SEED_IDS_SQL, query_params: { ...base, start: done, count }, clickhouse_settings: SEED_SETTINGS });
      await client.command({
        query: SEED_INSERT_SQL,
        query_params: { ...base, start: done, count },
        clickhouse_settings: SEED_SETTINGS,
      });
      done += count;
      onProgress?.(done, responses);
      const rowsPerSecond = count / Math.max((performance.now() - t0) / 1000, 0.001);
      chunk = Math.max(FIRST_CHUNK_ROWS, Math.min(MAX_CHUNK_ROWS, Math.round((rowsPerSecond * CHUNK_TARGET_SECONDS) / 50_000) * 50_000));
    }
  };
  // The whole org is marked pending (read from the raw table) while the chunks are written, then
  // every rollup slice of the created_at window (within the `days` calendar days up to `now`) is
  // recomputed: src/responses/rollups/maintain.ts.
  const windowEnd = parseInstantMicros(now.toISOString())! + 1n;
  await withOrgMaintenance(client, orgId.toLowerCase(), writeChunks, { from: windowEnd - BigInt(days + 1) * MICROS_PER_DAY, to: windowEnd });
  return { inserted: done, seconds: (performance.now() - started) / 1000, surveyIds: plan.map((s) => s.id) };
}
