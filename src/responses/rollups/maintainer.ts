/**
 * Rollup maintenance behind the API writer, off the write's path and coalesced.
 *
 * A write marks its hour slices pending before it writes, and is acknowledged once its rows are
 * committed. The recompute of its slices happens here, after the acknowledgement: every slice
 * written since the last round is recomputed once, however many writes touched it, and then its
 * marks are taken back. Readers serve a slice from the rollup only while its marks sum to 0
 * (read.ts), so every answer after the 200 is exact whether or not the recompute has run yet;
 * what the recompute buys is speed.
 *
 * Why not in the write's path: the three recompute statements (hour, day, month, each an
 * INSERT ... SELECT over FINAL) cost more engine CPU than the write itself, per batch and whatever
 * its size (bench/responses-write/README.md, "Figures behind the schema and the code"), and a
 * stream of batches into the same hours would recompute the same slices once per batch. Here a
 * round covers every batch that arrived during the previous one.
 *
 * One mark per slice and process, shared by its writes: a slice this process holds a committed
 * mark on (not yet taken back) is already pending for every reader, so a write into it adds no
 * mark of its own; only a slice without one gets +1 (in one INSERT per write, awaited by every
 * write that needs it). Per slice the process counts the writes between their mark and their end
 * (`writing`) and the writes ended (`version`). A round recomputes the slices queued that no write
 * is writing into (a recompute under a write in flight could not take the mark back: the write
 * keeps the slice pending anyway), then takes back a slice's mark only if, once the recompute is
 * done, no write is in flight and none ended since the round's snapshot: every write into it was
 * committed before the recompute started reading survey_responses FINAL. Otherwise the mark stays
 * and the slice waits for the round after its writes. A write that needs a mark while one is being
 * taken back waits for the take-back, then adds its own. So the mark is in place from before any
 * write's INSERT until after a recompute that saw it, as the invariant of pending.ts requires.
 *
 * Pacing: under a writer that never pauses, rounds would run back to back, each re-reading every
 * slice written during the one before, and most of them for nothing (the writes that follow keep
 * the slices marked); the next round waits PACE times as long as the last one took, so a round
 * covers the writes of PACE + 1 times its time and recomputes use at most 1 / (PACE + 1) of it.
 * A round of a few slices takes little, so the wait after it stays short. The price of a larger
 * PACE is how long written hours stay pending after their writes (read from the raw table: exact,
 * slower), up to PACE round times; a smaller one recomputes the same slices more often (both
 * measured under writes, reads beside: bench/responses-write/README.md).
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
/** The wait after a round, as a multiple of its time (the header). */
const PACE = 8;
/** After a failed round. */
const RETRY_MS = 2000;
/** Between two checks for dead owners (the first runs at start). */
const TAKEOVER_MS = 30_000;
/** At shutdown: how long the cut round may take to end, and the stop record to be written. */
const ABANDON_WAIT_MS = 2_000;

/** This process's state of one hour slice: kept while it holds a mark or a write is in it. */
interface SliceState {
  slice: HourSlice;
  /** Marks of this owner on the slice, committed and not taken back. */
  marks: number;
  /** The +1 being added (writes that need the mark await it). */
  marking: Promise<void> | undefined;
  /** The take-back being written (a write that needs a mark awaits it, then adds its own). */
  takingBack: Promise<void> | undefined;
  /** Writes between their mark and their end. */
  writing: number;
  /** Writes ended (one more at each `written`). */
  version: number;
  /** Waiting for a round (a write ended since the last recompute that covered it). */
  queued: boolean;
}

export class RollupMaintainer {
  /** org -> "survey/hour" -> the slice's state. */
  private slices = new Map<string, Map<string, SliceState>>();
  /** Slices queued for a round, by org. */
  private queued = new Map<string, Set<SliceState>>();
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

  /**
   * Marks the slices pending: before the write, so that no reader trusts them from then on. Adds
   * +1 only to the slices this process holds no mark on (the header); resolves once every slice
   * holds a committed mark.
   */
  async mark(orgId: string, slices: readonly HourSlice[]): Promise<void> {
    if (slices.length === 0) return;
    this.inFlight++;
    const states = slices.map((slice) => this.stateOf(orgId, slice));
    for (const st of states) st.writing++;
    try {
      // Registered first, so that whoever finds these marks after a crash can tell they are ours.
      await this.register();
      for (;;) {
        const waits: Promise<unknown>[] = [];
        const need: SliceState[] = [];
        for (const st of states) {
          if (st.takingBack) waits.push(st.takingBack.catch(() => {}));
          else if (st.marking) waits.push(st.marking.catch(() => {}));
          else if (st.marks <= 0) need.push(st);
        }
        if (need.length === 0 && waits.length === 0) return;
        if (need.length > 0) {
          const adding = addMarks(this.client(), orgId, need.map((st) => ({ slice: st.slice, marks: 1 })), this.self.owner).then(() => {
            for (const st of need) st.marks++;
          });
          const settled = adding.finally(() => {
            for (const st of need) if (st.marking === settled) st.marking = undefined;
          });
          for (const st of need) st.marking = settled;
          waits.push(settled);
        }
        await Promise.all(waits);
      }
    } catch (err) {
      for (const st of states) st.writing--;
      for (const st of states) this.forgetIfIdle(orgId, st);
      this.ended();
      throw err;
    }
  }

  private ended() {
    if (--this.inFlight === 0) for (const wake of this.inFlightWaiters.splice(0)) wake();
  }

  private stateOf(orgId: string, slice: HourSlice): SliceState {
    let org = this.slices.get(orgId);
    if (!org) this.slices.set(orgId, (org = new Map()));
    const key = `${slice.surveyId}/${slice.hour}`;
    let st = org.get(key);
    if (!st) org.set(key, (st = { slice, marks: 0, marking: undefined, takingBack: undefined, writing: 0, version: 0, queued: false }));
    return st;
  }

  /** Drops the state of a slice nothing holds any more. */
  private forgetIfIdle(orgId: string, st: SliceState) {
    if (st.marks !== 0 || st.marking || st.takingBack || st.writing > 0 || st.queued) return;
    const org = this.slices.get(orgId);
    const key = `${st.slice.surveyId}/${st.slice.hour}`;
    if (org?.get(key) !== st) return;
    org.delete(key);
    if (org.size === 0) this.slices.delete(orgId);
  }

  private enqueue(orgId: string, st: SliceState) {
    st.queued = true;
    let set = this.queued.get(orgId);
    if (!set) this.queued.set(orgId, (set = new Set()));
    set.add(st);
  }

  /**
   * After the write (committed, or failed after marking: the recompute is right whatever the write
   * left): queues the slices' recompute, which takes their mark back.
   */
  written(orgId: string, slices: readonly HourSlice[]): void {
    if (slices.length === 0) return;
    this.ended();
    for (const slice of slices) {
      const st = this.stateOf(orgId, slice);
      st.writing--;
      st.version++;
      if (!this.abandoned) this.enqueue(orgId, st);
    }
    // Shutting down: queued for the drain to abandon, not started (a round would be cut anyway).
    if (!this.closing && !this.abandoned) this.schedule(GATHER_MS);
  }

  /** Slices queued that a round can take now: no write is in them. */
  private get ready(): boolean {
    for (const set of this.queued.values()) for (const st of set) if (st.writing === 0 && !st.takingBack) return true;
    return false;
  }

  /** Resolves once every write queued so far is recomputed (or its round failed and was retried). */
  settle(): Promise<void> {
    if (!this.running && !this.timer && this.queued.size === 0) return Promise.resolve();
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
    const queued = [...this.queued.values()].reduce((n, org) => n + org.size, 0);
    for (const set of this.queued.values()) for (const st of set) st.queued = false;
    this.queued.clear();
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
        // Paced (the header): a round's cost follows its slices, not their writes.
        if (this.ready) this.schedule(ok ? Math.max(GATHER_MS, PACE * (Date.now() - started)) : RETRY_MS);
        else if (this.queued.size === 0) for (const wake of this.idleWaiters.splice(0)) wake();
      });
    }, delayMs);
    this.timer.unref();
  }

  /**
   * Recomputes every slice queued now that no write is in, then takes back the marks it may (the
   * header): true, or false when it failed (the slices wait RETRY_MS).
   */
  private async round(): Promise<boolean> {
    this.stats.rounds++;
    let failed = false;
    for (const [orgId, set] of [...this.queued]) {
      const taken = [...set].filter((st) => st.writing === 0 && !st.takingBack);
      if (taken.length === 0) continue;
      const versions = new Map(taken.map((st) => [st, st.version]));
      for (const st of taken) {
        st.queued = false;
        set.delete(st);
      }
      if (set.size === 0) this.queued.delete(orgId);
      try {
        const client = this.client();
        await recomputeSlices(client, orgId, taken.map((st) => st.slice), this.queryIdPrefix);
        // Cut at shutdown: the marks stay, for whoever takes this owner over.
        if (this.abandoned) return false;
        this.stats.recomputedSlices += taken.length;
        // Decided and started in one synchronous step: a write that comes after waits for it.
        const back = taken.filter((st) => st.writing === 0 && st.version === versions.get(st) && st.marks > 0 && !st.marking);
        if (back.length > 0) await this.takeBack(client, orgId, back);
      } catch (err) {
        if (this.abandoned) return false;
        failed = true;
        this.stats.failures++;
        this.log.warn({ msg: 'rollup recompute failed; its hours are read from the raw table until it succeeds', orgId, slices: taken.length, err: String(err) });
        for (const st of taken) this.enqueue(orgId, st);
      }
      for (const st of taken) this.forgetIfIdle(orgId, st);
    }
    return !failed;
  }

  /** Takes back this owner's marks on the slices (recomputed, no write in them since). */
  private async takeBack(client: ClickHouseClient, orgId: string, states: SliceState[]): Promise<void> {
    const deltas = states.map((st) => ({ slice: st.slice, marks: -st.marks }));
    const writing = addMarks(client, orgId, deltas, this.self.owner).then(() => {
      states.forEach((st, i) => (st.marks += deltas[i].marks));
    });
    const settled = writing.finally(() => {
      for (const st of states) if (st.takingBack === settled) st.takingBack = undefined;
    });
    for (const st of states) st.takingBack = settled;
    await settled;
  }
}
