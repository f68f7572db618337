import type { ClickHouseClient } from '@clickhouse/client';
import { performance } from 'node:perf_hooks';
import { encodeEventChunk } from '../../src/events/encode.ts';
import { insertEvents } from '../../src/events/ingest.ts';
import { parseEventBatch } from '../../src/events/schema.ts';
import { PerSecond, summarize, type LatencySummary } from '../lib/stats.ts';

/**
 * The limit: the same events inserted straight into `events` with @clickhouse/client, no HTTP, no
 * validation, no group commit. Rows come from the service's own parseEventBatch + encoder
 * (encode.ts), computed before the clock starts, and go through the service's own insertEvents
 * (the same RowBinary INSERT with the same settings), so the difference between the two is
 * exactly what the service adds: HTTP, JSON parsing, validation, row building, queueing, and the
 * message-id checks.
 */
export interface DirectResult {
  rows_per_insert: number;
  concurrency: number;
  seconds: number;
  inserts: number;
  rows: number;
  events_per_s: number;
  inserts_per_s: number;
  latency_ms: LatencySummary;
  failures: number;
  failure_sample: string | undefined;
  /** Every insert of the phase that succeeded: what must be in the table. */
  inserted_rows_total: number;
  per_second_events: number[];
}

/** One INSERT's body: `rows` rows as RowBinary. */
export interface PreparedInsert {
  body: Buffer;
  rows: number;
}

/**
 * INSERT bodies of `rowsPerInsert` rows for `orgIds` (each batch, a request's rows, for the next
 * organization in turn, as in a flush of many requests), cycling through the batches. Every row is
 * encoded afresh (its own random event_id), so no body holds a row twice and no two
 * prepared bodies are alike, as with the service; the phase cycles through them (up to ~160k rows
 * prepared, so a 10,000-row phase repeats its 16 bodies: a server that deduplicates identical
 * INSERTs, Replicated tables, would store fewer rows than inserted and the check would say so).
 */
export function prepareInserts(batches: unknown[][], orgIds: string | readonly string[], rowsPerInsert: number): PreparedInsert[] {
  const orgs = typeof orgIds === 'string' ? [orgIds] : orgIds;
  const count = Math.min(64, Math.max(4, Math.ceil(160_000 / rowsPerInsert)));
  const receivedAt = new Date();
  // Each prepared row gets a message_id of its own (the pool's batches share 100 placeholder ids):
  // the rows are then what a writer that stores every id once would store. The phase repeats its
  // prepared INSERTs, so a row is stored again whole (same event id, same key): copies of one row,
  // which the service's claim rule leaves alone, never two claims of one id for it to undo.
  let id = 0;
  const withOwnIds = (b: unknown[]) => b.map((e) => (e && typeof e === 'object' && 'message_id' in e ? { ...e, message_id: `direct-${id++}` } : e));
  // Known users get dense numbers per organization, 1, 2, 3... in order of appearance, as the
  // service's allocator gives them (src/events/user-numbers.ts), so the unique-user bitmaps the
  // engine builds hold what they hold behind the service.
  const numbers = new Map<string, Map<string, number>>(orgs.map((o) => [o, new Map()]));
  const out: PreparedInsert[] = [];
  let next = 0;
  for (let i = 0; i < count; i++) {
    const bodies: Buffer[] = [];
    let rows = 0;
    while (rows < rowsPerInsert) {
      const orgId = orgs[next % orgs.length];
      const events = parseEventBatch(withOwnIds(batches[next++ % batches.length].slice(0, rowsPerInsert - rows)));
      const chunk = encodeEventChunk(orgId, events, receivedAt);
      const known = numbers.get(orgId)!;
      for (let row = 0; row < chunk.rows; row++) {
        const user = chunk.userKey(row);
        if (user === undefined) continue;
        let n = known.get(user);
        if (n === undefined) known.set(user, (n = known.size + 1));
        chunk.setUserNumber(row, n);
      }
      bodies.push(chunk.body);
      rows += events.length;
    }
    out.push({ body: Buffer.concat(bodies), rows });
  }
  return out;
}

export async function directInsert(
  client: ClickHouseClient,
  inserts: PreparedInsert[],
  opts: { concurrency: number; seconds: number; warmupSeconds: number },
): Promise<DirectResult> {
  const start = performance.now();
  const measureFrom = start + opts.warmupSeconds * 1000;
  const end = measureFrom + opts.seconds * 1000;
  const latencies: number[] = [];
  const perSecond = new PerSecond(measureFrom);
  let next = 0;
  let ok = 0;
  let rows = 0;
  let total = 0;
  let failures = 0;
  let failureSample: string | undefined;
  const worker = async () => {
    while (performance.now() < end) {
      const batch = inserts[next++ % inserts.length];
      const t0 = performance.now();
      try {
        await insertEvents(client, [batch.body]);
        const t1 = performance.now();
        total += batch.rows;
        if (t1 >= measureFrom && t1 <= end) {
          ok++;
          rows += batch.rows;
          latencies.push(t1 - t0);
          perSecond.add(t1, batch.rows);
        }
      } catch (err) {
        failures++;
        failureSample ??= String((err as Error).message ?? err).slice(0, 300);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, () => worker()));
  return {
    rows_per_insert: inserts[0]?.rows ?? 0,
    concurrency: opts.concurrency,
    seconds: opts.seconds,
    inserts: ok,
    rows,
    events_per_s: rows / opts.seconds,
    inserts_per_s: ok / opts.seconds,
    latency_ms: summarize(latencies),
    failures,
    failure_sample: failureSample,
    inserted_rows_total: total,
    per_second_events: perSecond.values(opts.seconds),
  };
}
