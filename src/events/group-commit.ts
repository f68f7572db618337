import { unavailable } from '../server/errors.ts';

export interface GroupCommitOptions {
  /** Flush as soon as this many rows wait. */
  maxRows: number;
  /** Flush at the latest this long after the first row of a batch arrived. */
  delayMs: number;
  /** Bound on rows waiting or in flight; past it, submit() fails fast with 503. */
  maxQueuedRows: number;
  /** INSERTs in flight at once. */
  maxConcurrentFlushes: number;
}

interface Waiter<Row> {
  rows: Row[];
  resolve: (committedAt: number) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit: the rows of concurrent requests go into one INSERT per flush. A request's promise
 * resolves only after the INSERT holding its rows has been acknowledged by ClickHouse, and rejects
 * (503) if that INSERT fails, so nothing is acknowledged that is not committed.
 */
export class GroupCommitter<Row> {
  private waiting: Waiter<Row>[] = [];
  private waitingRows = 0;
  private inFlightRows = 0;
  private inFlight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly insert: (rows: Row[]) => Promise<void>, private readonly opts: GroupCommitOptions) {}

  /** Resolves with the commit time (ms since epoch) once the rows are committed. */
  submit(rows: Row[]): Promise<number> {
    if (this.closed) return Promise.reject(unavailable('The service is shutting down', 1));
    if (this.waitingRows + this.inFlightRows + rows.length > this.opts.maxQueuedRows) {
      return Promise.reject(unavailable('The ingest queue is full; retry shortly', 1));
    }
    return new Promise<number>((resolve, reject) => {
      this.waiting.push({ rows, resolve, reject });
      this.waitingRows += rows.length;
      this.schedule();
    });
  }

  get queuedRows(): number {
    return this.waitingRows + this.inFlightRows;
  }

  private schedule() {
    if (this.waiting.length === 0) return;
    if (this.waitingRows >= this.opts.maxRows || this.opts.delayMs === 0) {
      this.flushAvailable();
    } else if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.flushAvailable();
      }, this.opts.delayMs);
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

  private takeBatch(): Waiter<Row>[] {
    const batch: Waiter<Row>[] = [];
    let rows = 0;
    // Whole requests only; at least one, so a request larger than maxRows still goes.
    while (this.waiting.length > 0 && (batch.length === 0 || rows + this.waiting[0].rows.length <= this.opts.maxRows)) {
      const w = this.waiting.shift()!;
      rows += w.rows.length;
      batch.push(w);
    }
    this.waitingRows -= rows;
    this.inFlightRows += rows;
    return batch;
  }

  private async flush(batch: Waiter<Row>[]): Promise<void> {
    const rows = batch.length === 1 ? batch[0].rows : batch.flatMap((w) => w.rows);
    try {
      await this.insert(rows);
      const committedAt = Date.now();
      for (const w of batch) w.resolve(committedAt);
    } catch (err) {
      const failure = unavailable('Storing the events failed; retry shortly', 1);
      (failure as { cause?: unknown }).cause = err;
      for (const w of batch) w.reject(failure);
    } finally {
      this.inFlightRows -= rows.length;
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
