/**
 * Rollup maintenance behind the API writer, off the write's path and coalesced.
 *
 * A write marks its hour slices pending (+1 each) before it writes, and is acknowledged once its
 * rows are committed. The recompute of its slices happens here, after the acknowledgement: every
 * slice written since the last round is recomputed once, however many writes touched it, and
 * then its marks are taken back (minus the number of writes that marked it). Readers serve a
 * slice from the rollup only while its marks sum to 0 (read.ts), so every answer after the 200
 * is exact whether or not the recompute has run yet; what the recompute buys is speed.
 *
 * Why not in the write's path: the three recompute statements (hour, day, month, each an
 * INSERT ... SELECT over FINAL) cost more engine CPU than the write itself, per batch and whatever
 * its size (bench/responses-write/README.md, "Figures behind the schema and the code"), and a
 * stream of batches into the same hours would recompute the same slices once per batch. Here a
 * round covers every batch that arrived during the previous one.
 *
 * Pacing: under a writer that never pauses, rounds would run back to back, each re-reading every
 * slice written during the one before; the next round waits as long as the last one took, so a
 * round covers the writes of twice its time and recomputes use at most half of it.
 *
 * Correctness of the coalescing: a round snapshots the slices and their mark counts, then starts
 * the recompute, which reads survey_responses FINAL as of its start and so includes every write
 * in the snapshot (each was committed before it entered the snapshot). A write that commits
 * during the round is in the next snapshot and keeps its own mark until the next round: the
 * count of marks never drops below the number of writes not yet recomputed.
 *
 * A failed round (engine down) puts its slices back and is retried after RETRY_MS; until then
 * they are read from the raw table. A crash leaves the marks: `tallyhouse rollups rebuild`.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from '../../log.ts';
import { recomputeSlices } from './maintain.ts';
import { addMarks } from './pending.ts';
import type { HourSlice } from './slices.ts';

/** Writes arriving within this time of the first one share its round. */
const GATHER_MS = 50;
/** After a failed round. */
const RETRY_MS = 2000;

interface Dirty {
  slice: HourSlice;
  /** Pending marks added by the writes waiting for this recompute. */
  marks: number;
}

export class RollupMaintainer {
  /** org -> "survey/hour" -> the slice and its marks. */
  private dirty = new Map<string, Map<string, Dirty>>();
  private running: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly idleWaiters: Array<() => void> = [];
  private closing = false;
  readonly stats = { rounds: 0, recomputedSlices: 0, failures: 0 };

  constructor(
    private readonly client: () => ClickHouseClient,
    private readonly log: Logger,
  ) {}

  /** Marks the slices pending: before the write, so that no reader trusts them from then on. */
  async mark(orgId: string, slices: readonly HourSlice[]): Promise<void> {
    if (slices.length > 0) await addMarks(this.client(), orgId, slices.map((slice) => ({ slice, marks: 1 })));
  }

  /**
   * After the write (committed, or failed after marking: the recompute is right whatever the write
   * left): queues the slices' recompute, which takes their marks back.
   */
  written(orgId: string, slices: readonly HourSlice[]): void {
    if (slices.length === 0) return;
    let org = this.dirty.get(orgId);
    if (!org) this.dirty.set(orgId, (org = new Map()));
    for (const slice of slices) {
      const key = `${slice.surveyId}/${slice.hour}`;
      const entry = org.get(key);
      if (entry) entry.marks++;
      else org.set(key, { slice, marks: 1 });
    }
    this.schedule(this.closing ? 0 : GATHER_MS);
  }

  /** Resolves once every write queued so far is recomputed (or its round failed and was retried). */
  settle(): Promise<void> {
    if (!this.running && !this.timer && this.dirty.size === 0) return Promise.resolve();
    if (this.timer) this.schedule(0);
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Graceful shutdown: runs what is queued now, without the gathering delay, and waits for it. */
  async drain(): Promise<void> {
    this.closing = true;
    await this.settle();
  }

  private schedule(delayMs: number) {
    if (this.running) return; // the running round starts the next one when it ends
    if (this.timer && delayMs > 0) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const started = Date.now();
      this.running = this.round().then((ok) => {
        this.running = undefined;
        if (!ok && this.closing) {
          // Shutting down with the engine failing: the marks stay (raw reads) until a rebuild.
          this.log.warn({ msg: 'rollup recompute abandoned at shutdown; run `tallyhouse rollups rebuild`', orgs: this.dirty.size });
          this.dirty.clear();
        }
        // Paced: the next round waits as long as this one took (at least GATHER_MS), so that
        // recomputes take at most half of the time of a writer that never pauses, each covering
        // the writes of twice as long (a round's cost follows its slices, not their writes).
        if (this.dirty.size > 0) this.schedule(this.closing ? 0 : ok ? Math.max(GATHER_MS, Date.now() - started) : RETRY_MS);
        else for (const wake of this.idleWaiters.splice(0)) wake();
      });
    }, delayMs);
    this.timer.unref();
  }

  /** Recomputes every slice queued now: true, or false when it failed (the slices wait RETRY_MS). */
  private async round(): Promise<boolean> {
    const round = this.dirty;
    this.dirty = new Map();
    this.stats.rounds++;
    let failed = false;
    for (const [orgId, entries] of round) {
      const list = [...entries.values()];
      try {
        const client = this.client();
        await recomputeSlices(client, orgId, list.map((d) => d.slice));
        await addMarks(client, orgId, list.map((d) => ({ slice: d.slice, marks: -d.marks })));
        this.stats.recomputedSlices += list.length;
      } catch (err) {
        failed = true;
        this.stats.failures++;
        this.log.warn({ msg: 'rollup recompute failed; its hours are read from the raw table until it succeeds', orgId, slices: list.length, err: String(err) });
        for (const d of list) this.requeue(orgId, d);
      }
    }
    return !failed;
  }

  private requeue(orgId: string, d: Dirty) {
    let org = this.dirty.get(orgId);
    if (!org) this.dirty.set(orgId, (org = new Map()));
    const key = `${d.slice.surveyId}/${d.slice.hour}`;
    const entry = org.get(key);
    if (entry) entry.marks += d.marks;
    else org.set(key, { ...d });
  }
}
