/**
 * Reads beside the writes: what the rollups' pending hours cost a dashboard that polls the
 * organization being written. A reader sends, every `everyMs`, a survey summary and a daily
 * aggregation (completion x 100 days, as bench/query's cases) over the last 99 days, one after the
 * other, each with its own range end (a microsecond apart, so the 3 s polling cache never answers),
 * and notes how many hour slices of the org were pending just before. The same reads once the
 * writes are over and every mark is taken back are the baseline (every hour served by the rollup).
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { timedRequest } from '../query/http.ts';
import { sliceStartSql } from '../../src/responses/rollups/slices.ts';
import { round, summarize } from '../lib/stats.ts';
import { isoMicros } from './records.ts';

const DAY_MS = 86_400_000;

export interface ReadFigures {
  reads: number;
  summary_ms: { p50: number; p95: number; mean: number };
  aggregation_ms: { p50: number; p95: number; mean: number };
  /** Hour slices of the org pending before each pair (mean, max). */
  pending_slices: { mean: number; max: number };
}

export class Reader {
  private variant = 0;
  private summary: number[] = [];
  private aggregation: number[] = [];
  private pending: number[] = [];
  private readonly startMs: number;
  private readonly endMs: number;

  constructor(private readonly url: string, private readonly token: string, private readonly client: ClickHouseClient, private readonly orgId: string) {
    // The end an hour ahead (every write of the phase inside), the start 99 days before that day.
    this.endMs = Date.now() + 3_600_000;
    this.startMs = Math.floor(this.endMs / DAY_MS) * DAY_MS - 99 * DAY_MS;
  }

  private range() {
    const v = this.variant++ % 1_000_000;
    return { start: new Date(this.startMs).toISOString(), end: isoMicros(this.endMs - 1 - Math.floor(v / 1000), 999 - (v % 1000)) };
  }

  private async pendingSlices(): Promise<number> {
    const rs = await this.client.query({
      query: 'SELECT count() AS n FROM (SELECT 1 FROM survey_rollup_pending WHERE org_id = {org:UUID} GROUP BY survey_id, hour HAVING sum(pending) != 0)',
      query_params: { org: this.orgId },
      format: 'JSONEachRow',
    });
    const [row] = await rs.json<{ n: string }>();
    return Number(row?.n ?? 0);
  }

  /** One summary and one daily aggregation, timed. */
  async pair(): Promise<void> {
    this.pending.push(await this.pendingSlices());
    const s = await timedRequest(this.url, 'SEARCH', '/1.0/survey/*/response/summary', this.token, { range: this.range() });
    if (s.status !== 200) throw new Error(`summary: HTTP ${s.status}: ${s.text.slice(0, 300)}`);
    this.summary.push(s.ms);
    const a = await timedRequest(this.url, 'SEARCH', '/1.0/survey/*/response/aggregation', this.token, {
      range: this.range(),
      group_by: [{ field: 'completion' }, { field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 100 }],
    });
    if (a.status !== 200) throw new Error(`aggregation: HTTP ${a.status}: ${a.text.slice(0, 300)}`);
    this.aggregation.push(a.ms);
  }

  /** Pairs every `everyMs` (or back to back when a pair takes longer) until `done` settles. */
  async during(done: Promise<unknown>, everyMs: number): Promise<ReadFigures> {
    let over = false;
    void done.finally(() => (over = true));
    while (!over) {
      const t0 = performance.now();
      await this.pair();
      const left = everyMs - (performance.now() - t0);
      if (left > 0 && !over) await Promise.race([new Promise((r) => setTimeout(r, left)), done.catch(() => {})]);
    }
    return this.figures();
  }

  /** Seconds until no hour slice of the org is pending (the last round's marks taken back), polled every 100 ms. */
  async settled(): Promise<number> {
    const t0 = performance.now();
    while ((await this.pendingSlices()) > 0) {
      if (performance.now() - t0 > 600_000) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    return round((performance.now() - t0) / 1000, 2);
  }

  /**
   * `n` pairs back to back with every hour slice of `surveyId` marked pending (as the nil owner,
   * taken back after): what reading those hours from the raw table costs, without the writes'
   * CPU beside it.
   */
  async quietMarked(n: number, surveyId: string): Promise<ReadFigures> {
    const marks = (delta: number) => this.client.command({
      query:
        'INSERT INTO survey_rollup_pending (org_id, survey_id, hour, pending) SELECT org_id, survey_id, h, {delta:Int64} FROM (' +
        `SELECT DISTINCT org_id, survey_id, ${sliceStartSql('hour', 'created_at')} AS h FROM survey_responses WHERE org_id = {org:UUID} AND survey_id = {survey:UUID})`,
      query_params: { org: this.orgId, survey: surveyId, delta },
      clickhouse_settings: { insert_deduplicate: 0 },
    });
    await marks(1);
    try {
      return await this.quiet(n);
    } finally {
      await marks(-1);
    }
  }

  /** `n` pairs back to back. */
  async quiet(n: number): Promise<ReadFigures> {
    for (let i = 0; i < n; i++) await this.pair();
    return this.figures();
  }

  /** The figures since the last call. */
  private figures(): ReadFigures {
    const stat = (xs: number[]) => {
      const s = summarize(xs);
      return { p50: round(s.p50), p95: round(s.p95), mean: round(s.mean) };
    };
    const out = {
      reads: this.summary.length,
      summary_ms: stat(this.summary),
      aggregation_ms: stat(this.aggregation),
      pending_slices: { mean: round(this.pending.reduce((a, b) => a + b, 0) / Math.max(1, this.pending.length), 1), max: Math.max(0, ...this.pending) },
    };
    this.summary = [];
    this.aggregation = [];
    this.pending = [];
    return out;
  }
}
