import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { insertDataError } from '../../src/clickhouse/errors.ts';
import { GroupCommitter } from '../../src/events/group-commit.ts';
import { insertEvents } from '../../src/events/ingest.ts';
import { encodeEventChunk } from '../../src/events/encode.ts';
import { parseEventBatch } from '../../src/events/schema.ts';
import { tooLargeString } from './event-chunks.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * The event group commit against the real engine, below HTTP: a request whose rows the engine
 * cannot take (validation should have stopped them; this is the net under it) fails alone with a
 * 400, and the requests that shared its INSERT are stored, exactly once.
 */
describe('event group commit (real engine)', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.close());

  const storedFor = async (org: string) =>
    Number(
      (await (await svc.client.query({ query: 'SELECT count() AS c FROM events WHERE org_id = {org:UUID}', query_params: { org }, format: 'JSONEachRow' })).json<{ c: string }>())[0].c,
    );
  const chunkFor = (org: string, events: unknown[]) => encodeEventChunk(org, parseEventBatch(events), new Date()).body;

  it('one request with rows the engine refuses fails alone (400); its batch-mates are stored once', async () => {
    const committer = new GroupCommitter<Buffer>((chunks) => insertEvents(svc.client, chunks), { maxRows: 10_000, delayMs: 20, maxQueuedRows: 100_000, maxConcurrentFlushes: 1, classify: insertDataError });
    const [a, b, bad] = [randomUUID(), randomUUID(), randomUUID()];
    // A string length past any limit: refused by ClickHouse (TOO_LARGE_STRING_SIZE).
    const badChunk = tooLargeString(chunkFor(bad, [{ type: 'track', event_name: 'x' }]));
    const results = await Promise.allSettled([
      committer.submit(chunkFor(a, [{ type: 'track', event_name: 'one' }, { type: 'page', url: 'https://e.com/' }]), 2),
      committer.submit(badChunk, 1),
      committer.submit(chunkFor(b, [{ type: 'identify', user_alias: 'u', properties: { plan: 'pro' } }]), 1),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    const reason = (results[1] as PromiseRejectedResult).reason;
    expect(reason).to.include({ kind: 'invalid', code: 'validation_error' });
    expect(reason.message).to.include('TOO_LARGE_STRING_SIZE');
    expect([await storedFor(a), await storedFor(b), await storedFor(bad)]).to.deep.equal([2, 1, 0]);
  });

  it('an engine error that is not about the rows is a 503 for every request of the batch, with no retry one by one', async () => {
    let attempts = 0;
    const committer = new GroupCommitter<Buffer>(
      async () => {
        attempts++;
        await svc.client.command({ query: 'SELECT throwIf(1)' }); // a real ClickHouse exception, not a data error
      },
      { maxRows: 10_000, delayMs: 20, maxQueuedRows: 100_000, maxConcurrentFlushes: 1, classify: insertDataError },
    );
    const results = await Promise.allSettled([committer.submit(chunkFor(randomUUID(), [{ type: 'track', event_name: 'x' }]), 1), committer.submit(chunkFor(randomUUID(), [{ type: 'track', event_name: 'y' }]), 1)]);
    for (const r of results) expect((r as PromiseRejectedResult).reason).to.include({ kind: 'unavailable' });
    expect(attempts).to.equal(1);
  });

  it('an INSERT into events asks for nice -5 for its threads (os_thread_priority; a no-op without CAP_SYS_NICE)', async () => {
    const org = randomUUID();
    await insertEvents(svc.client, [chunkFor(org, [{ type: 'track', event_name: 'first' }])]);
    await svc.client.command({ query: 'SYSTEM FLUSH LOGS' });
    const rows = await (
      await svc.client.query({
        query: `SELECT if(mapContains(Settings, 'os_thread_priority'), Settings['os_thread_priority'], Settings['os_threads_nice_value_query']) AS p FROM system.query_log
                WHERE type = 'QueryFinish' AND query_kind = 'Insert' AND has(tables, concat(currentDatabase(), '.events'))
                ORDER BY event_time_microseconds DESC LIMIT 1`,
        format: 'JSONEachRow',
      })
    ).json<{ p: string }>(); // the engine logs the setting by its newer name, os_threads_nice_value_query
    expect(rows.map((r) => r.p)).to.deep.equal(['-5']);
    expect(await storedFor(org)).to.equal(1);
  });
});
