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
 * they are read from the raw table.
 *
 * Owners (owners.ts, takeover.ts): the marks carry this process's owner id. At shutdown the drain
 * waits for the writes in flight, abandons what is queued and cuts the round running (their marks
 * stay: those hours are read from the raw table, exact), then records the process as stopped; a
 * process that dies leaves its marks the same way. Every running process checks at start and every
 * TAKEOVER_MS whether an owner is dead, and the oldest live one takes its marks over.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from '../../log.ts';
import { recomputeSlices } from './maintain.ts';
import { HEARTBEAT_MS, newSelf, writeOwner, type Self } from './owners.ts';
import { addMarks } from './pending.ts';
import type { HourSlice } from './slices.ts';
import { takeOverDeadOwners } from './takeover.ts';

/** Writes arriving within this time of the first one share its round. */
const GATHER_MS = 50;
/** After a failed round. */
const RETRY_MS = 2000;
/** Between two checks for dead owners (the first runs at start). */
const TAKEOVER_MS = 30_000;
/** At shutdown: how long the cut round may take to end, and the stop record to be written. */
const ABANDON_WAIT_MS = 2_000;

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
  /** Shutting down: no round starts, the running one takes no mark back. */
  private abandoned = false;
  /** Writes between their mark and their `written`. */
  private inFlight = 0;
  private readonly inFlightWaiters: Array<() => void> = [];
  readonly self: Self = newSelf();
  /** When this owner started (this machine's clock: it only orders the successor candidates, the same for every reader). */
  private readonly started = new Date().toISOString().replace('T', ' ').replace('Z', '');
  private registered = false;
  private registering: Promise<void> | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private checking: NodeJS.Timeout | undefined;
  /** The heartbeat or the takeover check running now. */
  private background: Promise<unknown> = Promise.resolve();
  private backgroundBusy = false;
  private readonly backgroundWaiting = new Set<string>();
  readonly stats = { rounds: 0, recomputedSlices: 0, failures: 0, takenOver: 0 };

  constructor(
    private readonly client: () => ClickHouseClient,
    private readonly log: Logger,
  ) {}

  /**
   * Runs beside the service: registers this owner, refreshes its row every HEARTBEAT_MS, and takes
   * over the marks of dead owners now and every TAKEOVER_MS.
   */
  start(): void {
    if (this.heartbeat || this.closing) return;
    const beat = () => this.runBackground('heartbeat', () => (this.registered ? writeOwner(this.client(), this.self, 'running', this.started) : this.register()));
    const check = () => this.runBackground('takeover', () => this.takeOver());
    this.heartbeat = setInterval(beat, HEARTBEAT_MS).unref();
    this.checking = setInterval(check, TAKEOVER_MS).unref();
    void this.register().then(check, () => {});
  }

  /**
   * One background task at a time, and at most one of each kind waiting (a slow engine does not
   * pile them up); failures are logged and the task runs again at its next tick.
   */
  private runBackground(kind: 'heartbeat' | 'takeover', task: () => Promise<unknown>): void {
    if (this.closing || this.backgroundWaiting.has(kind)) return;
    this.backgroundWaiting.add(kind);
    this.background = this.background.then(async () => {
      this.backgroundWaiting.delete(kind);
      if (this.closing) return;
      this.backgroundBusy = true;
      try {
        await task();
      } catch (err) {
        if (!this.closing) this.log.warn({ msg: `rollup owner ${kind} failed; retried`, err: String(err) });
      } finally {
        this.backgroundBusy = false;
      }
    });
  }

  private register(): Promise<void> {
    this.registering ??= writeOwner(this.client(), this.self, 'running', this.started).then(() => {
      this.registered = true;
    }, (err) => {
      this.registering = undefined;
      throw err;
    });
    return this.registering;
  }

  private async takeOver(): Promise<void> {
    if (this.closing) return;
    const owners = await takeOverDeadOwners(this.client(), this.self, this.log, this.queryIdPrefix);
    this.stats.takenOver += owners.length;
  }

  /** Marks the slices pending: before the write, so that no reader trusts them from then on. */
  async mark(orgId: string, slices: readonly HourSlice[]): Promise<void> {
    if (slices.length === 0) return;
    this.inFlight++;
    try {
      // Registered first, so that whoever finds these marks after a crash can tell they are ours.
      await this.register();
      await addMarks(this.client(), orgId, slices.map((slice) => ({ slice, marks: 1 })), this.self.owner);
    } catch (err) {
      this.ended();
      throw err;
    }
  }

  private ended() {
    if (--this.inFlight === 0) for (const wake of this.inFlightWaiters.splice(0)) wake();
  }

  /**
   * After the write (committed, or failed after marking: the recompute is right whatever the write
   * left): queues the slices' recompute, which takes their marks back.
   */
  written(orgId: string, slices: readonly HourSlice[]): void {
    if (slices.length === 0) return;
    this.ended();
    if (this.abandoned) return;
    let org = this.dirty.get(orgId);
    if (!org) this.dirty.set(orgId, (org = new Map()));
    for (const slice of slices) {
      const key = `${slice.surveyId}/${slice.hour}`;
      const entry = org.get(key);
      if (entry) entry.marks++;
      else org.set(key, { slice, marks: 1 });
    }
    // Shutting down: queued for the drain to abandon, not started (a round would be cut anyway).
    if (!this.closing) this.schedule(GATHER_MS);
  }

  /** Resolves once every write queued so far is recomputed (or its round failed and was retried). */
  settle(): Promise<void> {
    if (!this.running && !this.timer && this.dirty.size === 0) return Promise.resolve();
    if (this.timer) this.schedule(0);
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Graceful shutdown: waits for the writes in flight (their marks), then abandons the recomputes
   * queued and cuts the one running (their marks stay: those hours are read raw, exact), and
   * records this owner as stopped, so that the next process to start takes its marks over at once.
   */
  async drain(): Promise<void> {
    this.closing = true;
    clearInterval(this.heartbeat);
    clearInterval(this.checking);
    if (this.inFlight > 0) await new Promise<void>((resolve) => this.inFlightWaiters.push(resolve));
    this.abandoned = true;
    const queued = [...this.dirty.values()].reduce((n, org) => n + org.size, 0);
    this.dirty.clear();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const running = this.running;
    if (running || queued > 0) {
      this.log.warn({ msg: 'rollup recompute abandoned at shutdown: its hours stay marked (read from the raw table) until the next start takes them over, or `tallyhouse rollups rebuild`', queuedSlices: queued, roundRunning: Boolean(running) });
    }
    const within = <T>(p: Promise<T>) => Promise.race([p.then(() => true, () => true), new Promise<false>((r) => setTimeout(r, ABANDON_WAIT_MS, false).unref())]);
    // The round's statements and the background ones (a takeover's recompute) are cut in the
    // engine, which would otherwise finish them before it stops.
    if (running || this.backgroundBusy) {
      await within(this.client().command({ query: 'KILL QUERY WHERE startsWith(query_id, {prefix:String}) ASYNC', query_params: { prefix: this.queryIdPrefix } }));
    }
    const ended = await within(Promise.all([running ?? Promise.resolve(), this.background]));
    for (const wake of this.idleWaiters.splice(0)) wake();
    // Recorded stopped only once no mark of this owner can change: the round may still be taking
    // its marks back when it did not end (then the pid check of the next start on this machine
    // finds it dead once it has exited).
    if (!ended || !this.registered) return;
    try {
      await writeOwner(this.client(), this.self, 'stopped', this.started, AbortSignal.timeout(ABANDON_WAIT_MS));
    } catch (err) {
      this.log.warn({ msg: 'could not record this rollup owner as stopped; a restart on this machine takes its marks over', err: String(err) });
    }
  }

  /** The query ids of this process's maintenance statements start with this (cut at shutdown). */
  get queryIdPrefix(): string {
    return `rollups-${this.self.owner}-`;
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
        if (this.closing) return;
        // Paced: the next round waits as long as this one took (at least GATHER_MS), so that
        // recomputes take at most half of the time of a writer that never pauses, each covering
        // the writes of twice as long (a round's cost follows its slices, not their writes).
        if (this.dirty.size > 0) this.schedule(ok ? Math.max(GATHER_MS, Date.now() - started) : RETRY_MS);
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
        await recomputeSlices(client, orgId, list.map((d) => d.slice), this.queryIdPrefix);
        // Cut at shutdown: the marks stay, for whoever takes this owner over.
        if (this.abandoned) return false;
        await addMarks(client, orgId, list.map((d) => ({ slice: d.slice, marks: -d.marks })), this.self.owner);
        this.stats.recomputedSlices += list.length;
      } catch (err) {
        if (this.abandoned) return false;
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
