import type { DomainError } from '../../src/errors.ts';
import { STATUS_OF } from '../../src/server/errors.ts';
import { expect } from 'chai';
import { GroupCommitter, type GroupCommitOptions } from '../../src/events/group-commit.ts';

/** An insert whose calls are recorded and settled by the test, one by one. */
class ControlledInsert {
  readonly calls: { chunks: string[]; rows: number; resolve: () => void; reject: (err: Error) => void }[] = [];
  readonly fn = (chunks: string[], rows: number) =>
    new Promise<void>((resolve, reject) => {
      this.calls.push({ chunks, rows, resolve, reject });
    });
}

const OPTIONS: GroupCommitOptions = { maxRows: 1000, delayMs: 20, maxQueuedRows: 10_000, maxConcurrentFlushes: 1 };
const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

describe('GroupCommitter', () => {
  it('puts the requests that arrive within the delay into one INSERT, and answers each after it is acknowledged', async () => {
    const insert = new ControlledInsert();
    // A delay far above a scheduling hiccup: on a loaded machine 20 ms passed between the two
    // submits, and the second found the first already due.
    const gc = new GroupCommitter(insert.fn, { ...OPTIONS, delayMs: 300 });
    let settled = 0;
    const a = gc.submit('a', 10).then((t) => (settled++, t));
    const b = gc.submit('b', 20).then((t) => (settled++, t));
    expect(insert.calls).to.have.length(0);
    await tick(600);
    expect(insert.calls.map((c) => [c.chunks, c.rows])).to.deep.equal([[['a', 'b'], 30]]);
    expect(settled).to.equal(0);
    insert.calls[0].resolve();
    const [ta, tb] = await Promise.all([a, b]);
    expect(ta).to.equal(tb);
    expect(gc.queuedRows).to.equal(0);
  });

  it('starts the next flush when a flush hands off its slot, and answers the first only when it ends', async () => {
    const calls: { chunks: string[]; handOff: () => void; resolve: () => void }[] = [];
    const gc = new GroupCommitter<string>(
      (chunks, _rows, handOff) => new Promise<void>((resolve) => calls.push({ chunks, handOff, resolve })),
      { ...OPTIONS, delayMs: 0 },
    );
    let firstDone = false;
    const first = gc.submit('a', 1).then(() => (firstDone = true));
    await tick();
    const second = gc.submit('b', 1);
    await tick(30);
    expect(calls.map((c) => c.chunks)).to.deep.equal([['a']]);
    expect(gc.waitingChunks).to.deep.equal(['b']);
    calls[0].handOff();
    calls[0].handOff(); // once is enough; a second call changes nothing
    await tick();
    expect(calls.map((c) => c.chunks)).to.deep.equal([['a'], ['b']]);
    expect(firstDone).to.equal(false);
    const third = gc.submit('c', 1);
    await tick(30);
    expect(calls).to.have.length(2); // the second flush holds the slot now
    calls[0].resolve();
    await first;
    await tick(30);
    expect(calls).to.have.length(2); // the first ending does not free the slot it handed off
    calls[1].resolve();
    await second;
    await tick();
    expect(calls.map((c) => c.chunks)).to.deep.equal([['a'], ['b'], ['c']]);
    calls[2].resolve();
    await third;
  });

  it('flushes at once when maxRows wait', async () => {
    const insert = new ControlledInsert();
    const gc = new GroupCommitter(insert.fn, { ...OPTIONS, maxRows: 30, delayMs: 10_000 });
    void gc.submit('a', 10);
    void gc.submit('b', 20);
    await tick();
    expect(insert.calls.map((c) => c.chunks)).to.deep.equal([['a', 'b']]);
    insert.calls[0].resolve();
  });

  it('gathers what arrives during an INSERT into the next one, which starts as soon as the first ends', async () => {
    const insert = new ControlledInsert();
    const gc = new GroupCommitter(insert.fn, { ...OPTIONS, delayMs: 0 });
    const first = gc.submit('a', 1);
    await tick();
    expect(insert.calls).to.have.length(1);
    const later = ['b', 'c', 'd'].map((x) => gc.submit(x, 1));
    await tick(30);
    expect(insert.calls).to.have.length(1); // one INSERT in flight at most
    insert.calls[0].resolve();
    await first;
    await tick();
    expect(insert.calls.map((c) => c.chunks)).to.deep.equal([['a'], ['b', 'c', 'd']]);
    insert.calls[1].resolve();
    await Promise.all(later);
  });

  it('does not wait the delay again for requests that waited it during an INSERT', async () => {
    const insert = new ControlledInsert();
    const gc = new GroupCommitter(insert.fn, { ...OPTIONS, delayMs: 20 });
    void gc.submit('a', 1);
    await tick(30);
    void gc.submit('b', 1);
    await tick(30); // b has now waited longer than the delay
    insert.calls[0].resolve();
    await tick();
    await tick();
    expect(insert.calls.map((c) => c.chunks)).to.deep.equal([['a'], ['b']]);
    insert.calls[1].resolve();
  });

  it('never splits a request, and sends one larger than maxRows on its own', async () => {
    const insert = new ControlledInsert();
    const gc = new GroupCommitter(insert.fn, { ...OPTIONS, maxRows: 100, maxConcurrentFlushes: 4 });
    void gc.submit('a', 60);
    void gc.submit('b', 60);
    void gc.submit('big', 500);
    await tick(40);
    expect(insert.calls.map((c) => [c.chunks, c.rows])).to.deep.equal([
      [['a'], 60],
      [['b'], 60],
      [['big'], 500],
    ]);
    for (const c of insert.calls) c.resolve();
  });

  it('rejects every request of a failed INSERT with 503, and keeps serving', async () => {
    const insert = new ControlledInsert();
    const gc = new GroupCommitter(insert.fn, { ...OPTIONS, delayMs: 5 });
    const results = Promise.allSettled([gc.submit('a', 1), gc.submit('b', 1)]);
    await tick(20);
    expect(insert.calls.map((c) => c.chunks)).to.deep.equal([['a', 'b']]);
    insert.calls[0].reject(new Error('engine down'));
    const [a, b] = await results;
    for (const r of [a, b]) {
      expect(r.status).to.equal('rejected');
      expect((r as PromiseRejectedResult).reason).to.include({ kind: 'unavailable' });
    }
    expect(gc.queuedRows).to.equal(0);
    const next = gc.submit('c', 1);
    await tick(20);
    insert.calls[1].resolve();
    expect(await next).to.be.a('number');
  });

  it('answers 503 at once when the queue bound would be passed', async () => {
    const insert = new ControlledInsert();
    const gc = new GroupCommitter(insert.fn, { ...OPTIONS, maxQueuedRows: 100, delayMs: 10_000 });
    void gc.submit('a', 80);
    let error: unknown;
    await gc.submit('b', 30).catch((err) => (error = err));
    expect(error).to.include({ kind: 'unavailable' });
    expect(gc.queuedRows).to.equal(80);
  });

  it('answers 503 when the queued bytes would pass maxQueuedBytes, and takes requests again once they are committed', async () => {
    const insert = new ControlledInsert();
    const gc = new GroupCommitter(insert.fn, { ...OPTIONS, maxQueuedBytes: 100, delayMs: 0 });
    const a = gc.submit('x'.repeat(60), 1);
    await tick();
    expect(insert.calls).to.have.length(1); // in flight: its bytes still count
    let error: unknown;
    await gc.submit('y'.repeat(50), 1).catch((err) => (error = err));
    expect(error).to.include({ kind: 'unavailable', retryAfterSeconds: 1 });
    const small = gc.submit('z'.repeat(40), 1);
    expect(gc.bytesQueued).to.equal(100);
    insert.calls[0].resolve();
    await a;
    await tick();
    insert.calls[1].resolve();
    await small;
    await tick();
    expect(gc.bytesQueued).to.equal(0);
    // One chunk over the bound still goes when nothing else is queued: no request is refused forever.
    const big = gc.submit('w'.repeat(500), 1);
    await tick();
    insert.calls[2].resolve();
    expect(await big).to.be.a('number');
  });

  it('drain commits everything queued, then refuses new requests', async () => {
    const insert = new ControlledInsert();
    const gc = new GroupCommitter(insert.fn, { ...OPTIONS, delayMs: 10_000 });
    const a = gc.submit('a', 1);
    const drained = gc.drain();
    await tick();
    expect(insert.calls.map((c) => c.chunks)).to.deep.equal([['a']]);
    insert.calls[0].resolve();
    await drained;
    await a;
    let error: unknown;
    await gc.submit('b', 1).catch((err) => (error = err));
    expect(error).to.include({ kind: 'unavailable' });
  });
  it('refuses at once (503) while the oldest waiting request has waited past maxWaitMs, and admits again once the queue moves', async () => {
    const insert = new ControlledInsert();
    const gc = new GroupCommitter(insert.fn, { ...OPTIONS, delayMs: 0, maxWaitMs: 50 });
    const a = gc.submit('a', 10);
    await tick(10);
    expect(insert.calls).to.have.length(1); // a is in flight; the INSERT does not finish
    const b = gc.submit('b', 10);
    gc.admit(); // b has not waited yet
    await tick(120);
    let refused: DomainError | undefined;
    try {
      gc.admit();
    } catch (err) {
      refused = err as DomainError;
    }
    expect(refused && STATUS_OF[refused.kind]).to.equal(503);
    expect(refused?.retryAfterSeconds).to.be.a('number');
    const c = await gc.submit('c', 10).catch((err: DomainError) => err);
    expect(STATUS_OF[(c as DomainError).kind]).to.equal(503);
    insert.calls[0].resolve();
    await a;
    await tick(10);
    expect(insert.calls[1].chunks).to.deep.equal(['b']); // c never queued
    gc.admit(); // b is in flight, nothing waits: the queue moves again
    insert.calls[1].resolve();
    await b;
  });

  it('a waiting request whose signal aborts leaves the queue and is never inserted; one already in flight stays', async () => {
    const insert = new ControlledInsert();
    const gc = new GroupCommitter(insert.fn, { ...OPTIONS, delayMs: 0 });
    const first = new AbortController();
    const second = new AbortController();
    const a = gc.submit('a', 10, first.signal);
    await tick(10);
    const b = gc.submit('b', 10, second.signal).catch((err: DomainError) => err);
    const c = gc.submit('c', 10);
    second.abort();
    first.abort(); // a is already in its flush
    expect(STATUS_OF[((await b) as DomainError).kind]).to.equal(400);
    expect(gc.queuedRows).to.equal(20);
    insert.calls[0].resolve();
    await a;
    await tick(10);
    expect(insert.calls.map((x) => x.chunks)).to.deep.equal([['a'], ['c']]);
    insert.calls[1].resolve();
    await c;
    await tick(0);
    expect(gc.queuedRows).to.equal(0);
  });

});

describe('GroupCommitter: a batch that fails because of one request\'s rows', () => {
  // Long enough that every request submitted in one synchronous loop lands in the first batch,
  // even on a machine slow enough to spend milliseconds between two submits.
  const GATHER_MS = 200;
  class BadRows extends Error {}
  const classify = (err: unknown) => (err instanceof BadRows ? Object.assign(new Error('bad rows'), { status: 400 }) : undefined);

  /** Records each INSERT; fails one holding `bad` (a data error) or, from `storeDownAfter` attempts on, any (a store error). */
  const recorder = (storeDownAfter = Infinity) => {
    const stored: string[] = [];
    const attempts: string[][] = [];
    const insert = async (chunks: string[]) => {
      attempts.push(chunks);
      if (attempts.length > storeDownAfter) throw new Error('ECONNREFUSED');
      if (chunks.includes('bad')) throw new BadRows();
      stored.push(...chunks);
    };
    return { stored, attempts, insert };
  };
  const submitAll = (gc: GroupCommitter<string>, chunks: string[]) => Promise.allSettled(chunks.map((c) => gc.submit(c, 1)));
  const statuses = (results: PromiseSettledResult<number>[]) =>
    results.map((r) => (r.status === 'fulfilled' ? 200 : ((r.reason as { status?: number }).status ?? STATUS_OF[(r.reason as DomainError).kind])));

  it('splits the batch in halves until the request at fault is alone: only it fails (with the 4xx), the others are stored once', async () => {
    const r = recorder();
    const gc = new GroupCommitter(r.insert, { ...OPTIONS, delayMs: GATHER_MS, classify });
    const results = await submitAll(gc, ['a', 'b', 'c', 'bad', 'e', 'f', 'g', 'h']);
    expect(r.attempts).to.deep.equal([
      ['a', 'b', 'c', 'bad', 'e', 'f', 'g', 'h'],
      ['a', 'b', 'c', 'bad'],
      ['a', 'b'],
      ['c', 'bad'],
      ['c'],
      ['bad'],
      ['e', 'f', 'g', 'h'],
    ]);
    expect(statuses(results)).to.deep.equal([200, 200, 200, 400, 200, 200, 200, 200]);
    expect(r.stored.sort()).to.deep.equal(['a', 'b', 'c', 'e', 'f', 'g', 'h']);
    await tick(); // the flush releases its rows once all its requests are answered
    expect(gc.queuedRows).to.equal(0);
  });

  it('a store failure while splitting fails what is left with 503, without trying it', async () => {
    const r = recorder(3); // the first 3 INSERTs reach the store, then it is down
    const gc = new GroupCommitter(r.insert, { ...OPTIONS, delayMs: GATHER_MS, classify });
    const results = await submitAll(gc, ['a', 'b', 'c', 'bad', 'e', 'f']);
    // [a b c bad e f] refused -> [a b c] stored -> [bad e f] refused -> [bad e]: store down.
    expect(r.attempts).to.deep.equal([['a', 'b', 'c', 'bad', 'e', 'f'], ['a', 'b', 'c'], ['bad', 'e', 'f'], ['bad', 'e']]);
    expect(statuses(results)).to.deep.equal([200, 200, 200, 503, 503, 503]);
    expect(r.stored).to.deep.equal(['a', 'b', 'c']);
    await tick();
    expect(gc.queuedRows).to.equal(0);
  });

  it('does not split a batch when the store itself failed: 503 for every request, one attempt', async () => {
    let attempts = 0;
    const gc = new GroupCommitter(
      async () => {
        attempts++;
        throw new Error('ECONNREFUSED');
      },
      { ...OPTIONS, delayMs: GATHER_MS, classify },
    );
    const results = await Promise.allSettled([gc.submit('a', 1), gc.submit('b', 1)]);
    expect(attempts).to.equal(1);
    for (const r of results) expect((r as PromiseRejectedResult).reason).to.include({ kind: 'unavailable' });
  });

  it('a lone request at fault gets the 4xx, not a retry', async () => {
    const gc = new GroupCommitter(
      async () => {
        throw new BadRows();
      },
      { ...OPTIONS, delayMs: GATHER_MS, classify },
    );
    const [r] = await Promise.allSettled([gc.submit('bad', 1)]);
    expect((r as PromiseRejectedResult).reason).to.include({ status: 400 });
  });

});
