import { AsyncResource } from 'node:async_hooks';
import { invalid, unavailable } from '../errors.ts';

export interface GroupCommitOptions {
  /** Flush as soon as this many rows wait (and a flush may start). */
  maxRows: number;
  /** Flush at the latest this long after the oldest waiting request arrived. */
  delayMs: number;
  /** Bound on rows waiting or in flight; past it, submit() fails fast with 503. */
  maxQueuedRows: number;
  /**
   * Bound on how long the oldest waiting request may have waited for its flush to start (ms):
   * past it the store is behind, and new requests are refused at once with 503 (`admit`,
   * `submit`) until the queue moves again. Default: no bound.
   */
  maxWaitMs?: number;
  /**
   * Bound on the bytes of the chunks waiting or in flight (the memory they hold): the row bound
   * alone would let 200,000 rows of large events hold ~2 GiB. A chunk larger than the bound still
   * goes when nothing else is queued, so no request is refused forever. Default: no bound.
   */
  maxQueuedBytes?: number;
  /** The bytes a chunk holds (default: a Buffer's or a string's length). */
  sizeOf?: (chunk: never) => number;
  /** INSERTs in flight at once. */
  maxConcurrentFlushes: number;
  /**
   * Tells a failure caused by the rows themselves (the engine could not parse them) from one of
   * the store (down, overloaded): for the former it returns the error the request gets (a 4xx).
   * The failed batch is then split in halves, recursively, until the requests at fault are alone:
   * they fail, every other request is stored. Store failures reject the whole batch with 503.
   * Without it, every failure is a store failure.
   */
  classify?: (err: unknown) => Error | undefined;
}

interface Waiter<Chunk> {
  chunk: Chunk;
  rows: number;
  bytes: number;
  arrivedAt: number;
  resolve: (committedAt: number) => void;
  reject: (err: unknown) => void;
  /** Stops listening to the request's abort signal (once the waiter leaves the queue). */
  release?: () => void;
}

const queueFull = () => unavailable('The ingest queue is full; retry shortly', 1);
const storeBehind = () => unavailable('The ingest queue is not moving: storage is behind; retry shortly', 1);

/**
 * Group commit: the chunks of concurrent requests (a chunk is one request's rows, already encoded)
 * go into one INSERT per flush. A request's promise resolves only after the INSERT holding its rows
 * has been acknowledged by ClickHouse, and rejects if that INSERT fails (503, or the 4xx of
 * `classify` of the options), so nothing is acknowledged that is not committed.
 *
 * The batch size adapts to the load: a flush starts when `maxRows` rows wait, or when the oldest
 * waiting request has waited `delayMs`, but never with more than `maxConcurrentFlushes` INSERTs in
 * flight. Under load, requests accumulate while the INSERTs run, so the next flush takes all of
 * them at once: the engine's fixed cost per INSERT (a new part per table) is paid per flush, not
 * per request, and the batches grow exactly as much as the engine is slow.
 *
 * Admission is bounded (docs/architecture.md, "Group commit"; the settings in docs/operations.md):
 * rows and bytes queued, and how long the oldest waiting request has waited. Past a bound a
 * request is refused with 503 before anything of it is queued (so it stores nothing), and `admit`
 * lets the route refuse it before its body is even read. A waiting request whose client goes away
 * (its `signal`) leaves the queue before any flush takes it: nothing of it is stored. Once taken
 * into a flush it is committed or failed with the flush, whether or not anyone still waits for
 * the answer.
 * The event write protocol as a whole: docs/architecture.md.
 */
export class GroupCommitter<Chunk> {
  private waiting: Waiter<Chunk>[] = [];
  private waitingRows = 0;
  private inFlightRows = 0;
  private queuedBytes = 0;
  /** Every flush not yet ended (drain waits for them). */
  private inFlight = new Set<Promise<void>>();
  /** Flushes holding a slot of `maxConcurrentFlushes`: started, and neither ended nor handed off. */
  private slots = 0;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  /**
   * `insert` stores a batch; its third argument, `handOff`, lets the next flush start before this
   * one has ended: once called, this flush no longer holds its slot of `maxConcurrentFlushes`. The
   * insert function calls it when what is left of its work need not precede the next flush's
   * start, and orders its own steps against the next flush's itself (the event path: its INSERT
   * acknowledged, the next flush numbers its users while this one's claims are read; the next
   * INSERT waits for them: ingest.ts). Its requests are still answered only when it resolves.
   */
  constructor(
    private readonly insert: (chunks: Chunk[], rows: number, handOff: () => void) => Promise<void>,
    private readonly opts: GroupCommitOptions,
  ) {}

  /** The chunks waiting for a flush, oldest first (to look at, not to change). */
  get waitingChunks(): readonly Chunk[] {
    return this.waiting.map((w) => w.chunk);
  }

  /**
   * Throws the 503 a new request would get now, whatever its size: shutting down, the queue at its
   * row or byte bound, or the oldest waiting request waiting past `maxWaitMs`. Cheap: for the
   * route, before the body is read and parsed.
   */
  admit(): void {
    if (this.closed) throw unavailable('The service is shutting down', 1);
    if (this.waitingRows + this.inFlightRows >= this.opts.maxQueuedRows) throw queueFull();
    if (this.queuedBytes >= (this.opts.maxQueuedBytes ?? Infinity)) throw queueFull();
    if (this.behind()) throw storeBehind();
  }

  /** Whether the oldest waiting request has waited past `maxWaitMs`. */
  private behind(now = Date.now()): boolean {
    return this.waiting.length > 0 && this.opts.maxWaitMs !== undefined && now - this.waiting[0].arrivedAt > this.opts.maxWaitMs;
  }

  /**
   * Resolves with the commit time (ms since epoch) once the `rows` rows of `chunk` are committed.
   * `signal`: the request's; aborted while the chunk still waits, the chunk leaves the queue and
   * the promise rejects (nothing of it is stored).
   */
  submit(chunk: Chunk, rows: number, signal?: AbortSignal): Promise<number> {
    if (this.closed) return Promise.reject(unavailable('The service is shutting down', 1));
    if (signal?.aborted) return Promise.reject(clientGone());
    if (this.waitingRows + this.inFlightRows + rows > this.opts.maxQueuedRows) return Promise.reject(queueFull());
    const bytes = this.opts.sizeOf ? this.opts.sizeOf(chunk as never) : byteSize(chunk);
    if (this.queuedBytes > 0 && this.queuedBytes + bytes > (this.opts.maxQueuedBytes ?? Infinity)) return Promise.reject(queueFull());
    if (this.behind()) return Promise.reject(storeBehind());
    this.queuedBytes += bytes;
    return new Promise<number>((resolve, reject) => {
      const waiter: Waiter<Chunk> = { chunk, rows, bytes, arrivedAt: Date.now(), resolve, reject };
      if (signal) {
        const onAbort = () => this.withdraw(waiter);
        signal.addEventListener('abort', onAbort, { once: true });
        waiter.release = () => signal.removeEventListener('abort', onAbort);
      }
      this.waiting.push(waiter);
      this.waitingRows += rows;
      this.schedule();
    });
  }

  /** Takes a waiting chunk out of the queue (its client went away); one already in a flush stays. */
  private withdraw(waiter: Waiter<Chunk>) {
    const at = this.waiting.indexOf(waiter);
    if (at < 0) return;
    this.waiting.splice(at, 1);
    this.waitingRows -= waiter.rows;
    this.queuedBytes -= waiter.bytes;
    waiter.reject(clientGone());
  }

  get bytesQueued(): number {
    return this.queuedBytes;
  }

  get queuedRows(): number {
    return this.waitingRows + this.inFlightRows;
  }

  /**
   * The async context the committer was made in (no request): flushes run in it, so what an
   * INSERT logs is not attributed to whichever request happened to start the flush.
   */
  private readonly home = new AsyncResource('GroupCommitter');

  private schedule() {
    this.home.runInAsyncScope(() => this.scheduleHere());
  }

  private scheduleHere() {
    if (this.waiting.length === 0 || this.slots >= this.opts.maxConcurrentFlushes) return;
    const waited = Date.now() - this.waiting[0].arrivedAt;
    if (this.waitingRows >= this.opts.maxRows || waited >= this.opts.delayMs) {
      this.flushAvailable();
    } else if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.flushAvailable();
      }, this.opts.delayMs - waited);
    }
  }

  /** Starts as many flushes as the concurrency allows. */
  private flushAvailable() {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    while (this.waiting.length > 0 && this.slots < this.opts.maxConcurrentFlushes) {
      const { batch, rows } = this.takeBatch();
      let holding = true;
      this.slots++;
      const release = () => {
        if (!holding) return;
        holding = false;
        this.slots--;
        this.schedule();
      };
      const p = this.flush(batch, rows, release).finally(() => {
        this.inFlight.delete(p);
        release();
      });
      this.inFlight.add(p);
    }
  }

  private takeBatch(): { batch: Waiter<Chunk>[]; rows: number } {
    let count = 0;
    let rows = 0;
    // Whole requests only; at least one, so a request larger than maxRows still goes.
    while (count < this.waiting.length && (count === 0 || rows + this.waiting[count].rows <= this.opts.maxRows)) {
      rows += this.waiting[count].rows;
      count++;
    }
    const batch = this.waiting.splice(0, count);
    for (const w of batch) w.release?.();
    this.waitingRows -= rows;
    this.inFlightRows += rows;
    return { batch, rows };
  }

  private async flush(batch: Waiter<Chunk>[], rows: number, handOff: () => void): Promise<void> {
    try {
      await this.commit(batch, rows, handOff);
    } finally {
      this.inFlightRows -= rows;
      for (const w of batch) this.queuedBytes -= w.bytes;
    }
  }

  /**
   * One INSERT for the batch. When the engine refuses it for its rows, each half is committed on
   * its own, down to single requests: one bad request costs about 2·log2(requests) more INSERTs, and
   * only it fails. That stores nothing twice because a parse failure aborts the INSERT before any
   * part is written (insertEvents makes the engine form one block of the whole body). A store
   * failure on the way fails what is left of the batch with 503, without trying the rest.
   */
  private async commit(batch: Waiter<Chunk>[], rows: number, handOff: () => void): Promise<'ok' | 'store-failed'> {
    try {
      await this.insert(batch.map((w) => w.chunk), rows, handOff);
      const committedAt = Date.now();
      for (const w of batch) w.resolve(committedAt);
      return 'ok';
    } catch (err) {
      const clientError = this.opts.classify?.(err);
      if (!clientError) {
        const failure = unavailable('Storing the events failed; retry shortly', 1);
        (failure as { cause?: unknown }).cause = err;
        for (const w of batch) w.reject(failure);
        return 'store-failed';
      }
      if (batch.length === 1) {
        batch[0].reject(clientError);
        return 'ok';
      }
      const half = Math.ceil(batch.length / 2);
      const halves = [batch.slice(0, half), batch.slice(half)];
      for (let i = 0; i < halves.length; i++) {
        const part = halves[i];
        if ((await this.commit(part, part.reduce((n, w) => n + w.rows, 0), handOff)) === 'store-failed') {
          const failure = unavailable('Storing the events failed; retry shortly', 1);
          for (const rest of halves.slice(i + 1)) for (const w of rest) w.reject(failure);
          return 'store-failed';
        }
      }
      return 'ok';
    }
  }

  /** Commits everything queued and waits for it: graceful shutdown. New submits get 503. */
  async drain(): Promise<void> {
    this.closed = true;
    while (this.waiting.length > 0 || this.inFlight.size > 0) {
      this.flushAvailable();
      await Promise.allSettled([...this.inFlight]);
    }
  }
}

/** Nobody is left to answer: the client closed the connection while its request waited. */
const clientGone = () => invalid('The client closed the connection before its events were stored');

/** The memory a chunk holds: a Buffer's or a string's bytes (other chunk types count 0). */
function byteSize(chunk: unknown): number {
  if (Buffer.isBuffer(chunk)) return chunk.length;
  if (typeof chunk === 'string') return Buffer.byteLength(chunk);
  return 0;
}
