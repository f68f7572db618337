import { unavailable } from '../server/errors.ts';

export interface GroupCommitOptions {
  /** Flush as soon as this many rows wait. */
  maxRows: number;
  /** Flush at the latest this long after the oldest waiting request arrived. */
  delayMs: number;
  /** Bound on rows waiting or in flight; past it, submit() fails fast with 503. */
  maxQueuedRows: number;
  /** INSERTs in flight at once. */
  maxConcurrentFlushes: number;
}

interface Waiter<Chunk> {
  chunk: Chunk;
  rows: number;
  arrivedAt: number;
  resolve: (committedAt: number) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit: the chunks of concurrent requests (a chunk is one request's rows, already encoded)
 * go into one INSERT per flush. A request's promise resolves only after the INSERT holding its rows
 * has been acknowledged by ClickHouse, and rejects if that INSERT fails (503, or the 4xx of
 * `classify` below), so nothing is acknowledged that is not committed.
 *
 * The batch size adapts to the load: a flush starts when `maxRows` rows wait, or when the oldest
 * waiting request has waited `delayMs`, but never with more than `maxConcurrentFlushes` INSERTs in
 * flight. Under load, requests accumulate while the INSERTs run, so the next flush takes all of
 * them at once: the engine's fixed cost per INSERT (a new part per table) is paid per flush, not
 * per request, and the batches grow exactly as much as the engine is slow.
 */
export class GroupCommitter<Chunk> {
  private waiting: Waiter<Chunk>[] = [];
  private waitingRows = 0;
  private inFlightRows = 0;
  private inFlight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  /**
   * @param classify Tells a failure caused by the rows themselves (the engine could not parse or
   *   take them) from one of the store (down, overloaded): for the former it returns the error the
   *   request gets (a 4xx), and each request of the failed batch is then inserted alone, so that
   *   one request's bad rows fail that request only, not every request it shared the INSERT with.
   *   Store failures reject the whole batch with 503.
   */
  constructor(
    private readonly insert: (chunks: Chunk[], rows: number) => Promise<void>,
    private readonly opts: GroupCommitOptions,
    private readonly now: () => number = Date.now,
    private readonly classify: (err: unknown) => Error | undefined = () => undefined,
  ) {}

  /** Resolves with the commit time (ms since epoch) once the `rows` rows of `chunk` are committed. */
  submit(chunk: Chunk, rows: number): Promise<number> {
    if (this.closed) return Promise.reject(unavailable('The service is shutting down', 1));
    if (this.waitingRows + this.inFlightRows + rows > this.opts.maxQueuedRows) {
      return Promise.reject(unavailable('The ingest queue is full; retry shortly', 1));
    }
    return new Promise<number>((resolve, reject) => {
      this.waiting.push({ chunk, rows, arrivedAt: this.now(), resolve, reject });
      this.waitingRows += rows;
      this.schedule();
    });
  }

  get queuedRows(): number {
    return this.waitingRows + this.inFlightRows;
  }

  private schedule() {
    if (this.waiting.length === 0 || this.inFlight.size >= this.opts.maxConcurrentFlushes) return;
    const waited = this.now() - this.waiting[0].arrivedAt;
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
    while (this.waiting.length > 0 && this.inFlight.size < this.opts.maxConcurrentFlushes) {
      const batch = this.takeBatch();
      const p = this.flush(batch).finally(() => {
        this.inFlight.delete(p);
        this.schedule();
      });
      this.inFlight.add(p);
    }
  }

  private takeBatch(): Waiter<Chunk>[] {
    let count = 0;
    let rows = 0;
    // Whole requests only; at least one, so a request larger than maxRows still goes.
    while (count < this.waiting.length && (count === 0 || rows + this.waiting[count].rows <= this.opts.maxRows)) {
      rows += this.waiting[count].rows;
      count++;
    }
    const batch = this.waiting.splice(0, count);
    this.waitingRows -= rows;
    this.inFlightRows += rows;
    return batch;
  }

  private async flush(batch: Waiter<Chunk>[]): Promise<void> {
    let rows = 0;
    for (const w of batch) rows += w.rows;
    try {
      await this.insert(batch.map((w) => w.chunk), rows);
      const committedAt = this.now();
      for (const w of batch) w.resolve(committedAt);
    } catch (err) {
      const clientError = this.classify(err);
      if (clientError && batch.length > 1) {
        // A parse failure aborts the INSERT before any part is written (a flush is far below the
        // engine's min_insert_block_size_rows, so it writes one block, once all of the body is
        // parsed): inserting the requests one by one stores each exactly once.
        for (const w of batch) await this.flushAlone(w);
      } else {
        for (const w of batch) w.reject(clientError ?? this.storeFailure(err));
      }
    } finally {
      this.inFlightRows -= rows;
    }
  }

  private async flushAlone(w: Waiter<Chunk>): Promise<void> {
    try {
      await this.insert([w.chunk], w.rows);
      w.resolve(this.now());
    } catch (err) {
      w.reject(this.classify(err) ?? this.storeFailure(err));
    }
  }

  private storeFailure(cause: unknown): Error {
    const failure = unavailable('Storing the events failed; retry shortly', 1);
    (failure as { cause?: unknown }).cause = cause;
    return failure;
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
