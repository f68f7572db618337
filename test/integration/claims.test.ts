import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { partsAbove } from '../../src/claims/block-log.ts';
import { ClaimView } from '../../src/claims/claims.ts';
import { EVENT_CLAIMS, encodeEventChunk, eventClaimView, eventPartition, insertOnce, messageKey } from '../../src/events/message-ids.ts';
import { insertEvents } from '../../src/events/ingest.ts';
import { parseEventBatch } from '../../src/events/schema.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * The claims module against the real engine, on the event claims (events.message_key): the view
 * loads what is claimed, reads other writers' claims by block number, and the lowest block wins,
 * also when the writer of the later copy is gone.
 */
describe('claims (events.message_key, real engine)', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.close());

  const view = (maxBytes = 1 << 20) => eventClaimView({ maxBytes, clustered: false });
  const track = (message_id: string) => ({ type: 'track', event_name: 'x', message_id });
  const chunk = (org: string, ids: string[]) => encodeEventChunk(org, parseEventBatch(ids.map(track)), new Date());
  const flush = (v: ClaimView, org: string, ids: string[]) => {
    const c = chunk(org, ids);
    return insertOnce(svc.client, [c], (bodies) => insertEvents(svc.client, bodies), { claims: v }).then(() => c);
  };
  const copies = async (org: string) => {
    const rs = await svc.client.query({
      query: 'SELECT message_id, toUInt32(count()) AS n FROM events WHERE org_id = {org:UUID} GROUP BY message_id ORDER BY message_id',
      query_params: { org },
      format: 'JSONEachRow',
    });
    return Object.fromEntries((await rs.json<{ message_id: string; n: number }>()).map((r) => [r.message_id, r.n]));
  };

  it('loads the claims of the window at its first use, rows written without message_key included (the column DEFAULT)', async () => {
    const org = randomUUID();
    await svc.client.command({
      query: `INSERT INTO events (org_id, event_id, type, timestamp, received_at, message_id) VALUES ({org:UUID}, generateUUIDv4(), 'track', now64(3), now64(3), 'before')`,
      query_params: { org },
    });
    const v = view();
    await v.ready(svc.client);
    expect(v.mayHold(messageKey(org, 'before'))).to.equal(true);
    expect(v.mayHold(messageKey(org, 'never'))).to.equal(false);
    expect(v.watermark > 0n).to.equal(true);
    // A retry of it is a duplicate.
    expect((await flush(v, org, ['before', 'after'])).duplicates).to.equal(1);
    expect(await copies(org)).to.deep.equal({ after: 1, before: 1 });
  });

  it('the confirming lookup finds a key ending in zero bytes', async () => {
    const org = randomUUID();
    let id = 0;
    while (messageKey(org, `z${id}`)[15] !== 0) id++;
    const v = view();
    await flush(v, org, [`z${id}`]);
    const found = await v.lookup(svc.client, [messageKey(org, `z${id}`)]);
    expect(found.map((c) => c.rowId)).to.have.length(1);
    expect((await flush(v, org, [`z${id}`])).duplicates).to.equal(1);
  });

  it("another writer's claims come in by block number: the watermark passes them and a retry of them is found without a stale view", async () => {
    const org = randomUUID();
    const [a, b] = [view(), view()];
    await a.ready(svc.client);
    await b.ready(svc.client);
    await flush(a, org, ['m1', 'm2']);
    const before = b.watermark;
    // b has not seen m1: its next flush of anything reads a's part and learns it.
    await flush(b, org, ['m3']);
    expect(b.watermark > before).to.equal(true);
    expect(b.mayHold(messageKey(org, 'm1'))).to.equal(true);
    expect((await flush(b, org, ['m1'])).duplicates).to.equal(1);
    expect(await copies(org)).to.deep.equal({ m1: 1, m2: 1, m3: 1 });
  });

  it("a lone writer's flush reads back only the parts list, also over two months; another writer's part in between takes the read by block number", async () => {
    const org = randomUUID();
    const v = view();
    await v.ready(svc.client);
    // Received on the 2nd of this month, one event 2.5 days earlier: two partitions, two parts.
    const now = new Date();
    const receivedAt = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 2));
    const earlier = new Date(receivedAt.getTime() - 60 * 3_600_000).toISOString();
    const c = encodeEventChunk(org, parseEventBatch([{ ...track('p1'), timestamp: earlier }, track('p2')]), receivedAt);
    expect(new Set(c.timeRange!.map(eventPartition)).size).to.equal(2);
    // Reads of the rows of events (the parts list is system.parts).
    const rowReads = async () => {
      await svc.client.command({ query: 'SYSTEM FLUSH LOGS' });
      const rs = await svc.client.query({
        query: "SELECT toUInt32(count()) AS n FROM system.query_log WHERE type = 'QueryFinish' AND current_database = currentDatabase() AND query_kind = 'Select' AND has(tables, concat(currentDatabase(), '.events'))",
        format: 'JSONEachRow',
      });
      return (await rs.json<{ n: number }>())[0].n;
    };
    const before = await rowReads();
    const top = v.watermark;
    await insertOnce(svc.client, [c], (bodies) => insertEvents(svc.client, bodies), { claims: v });
    expect(await rowReads()).to.equal(before);
    expect(v.watermark > top).to.equal(true);
    // The engine's partitions are the ones the flush computed.
    const rs = await svc.client.query({ query: 'SELECT DISTINCT _partition_id AS p FROM events WHERE org_id = {org:UUID} ORDER BY p', query_params: { org }, format: 'JSONEachRow' });
    expect((await rs.json<{ p: string }>()).map((r) => r.p)).to.deep.equal([...new Set(c.timeRange!.map(eventPartition))].sort());
    // Another writer commits a claim of p3 unseen: the next flush's parts list has its part too.
    await insertEvents(svc.client, [chunk(org, ['p3']).body]);
    await flush(v, org, ['p4']);
    expect(await rowReads()).to.be.greaterThan(before);
    expect(v.mayHold(messageKey(org, 'p3'))).to.equal(true);
    expect((await flush(v, org, ['p3'])).duplicates).to.equal(1);
  });

  it('the parts list above a block (partsAbove) is the active parts the engine selects by max_block_number', async () => {
    const org = randomUUID();
    for (const id of ['q1', 'q2', 'q3']) await insertEvents(svc.client, [chunk(org, [id]).body]);
    const activeParts = async () => {
      const rs = await svc.client.query({
        query: "SELECT partition_id, level, toString(min_block_number) AS lo, toString(max_block_number) AS hi FROM system.parts WHERE database = currentDatabase() AND table = 'events' AND active ORDER BY max_block_number",
        format: 'JSONEachRow',
      });
      return (await rs.json<{ partition_id: string; level: number; lo: string; hi: string }>()).map((r) => ({ partition: r.partition_id, level: Number(r.level), min: BigInt(r.lo), max: BigInt(r.hi) }));
    };
    const byTop = (a: { max: bigint }, b: { max: bigint }) => (a.max < b.max ? -1 : a.max > b.max ? 1 : 0);
    // Compared only when no merge changed the active parts around the read (merges run in the background).
    let compared = 0;
    for (let attempt = 0; attempt < 20 && compared === 0; attempt++) {
      const active = await activeParts();
      const tops = [active[active.length - 2].max, -1n, active[active.length - 1].max];
      const got = await Promise.all(tops.map((from) => partsAbove(svc.client, 'events', from)));
      if (JSON.stringify(await activeParts(), (_, v) => (typeof v === 'bigint' ? String(v) : v)) !== JSON.stringify(active, (_, v) => (typeof v === 'bigint' ? String(v) : v))) continue;
      tops.forEach((from, i) => expect(got[i].sort(byTop)).to.deep.equal(active.filter((p) => p.max > from)));
      compared++;
    }
    expect(compared).to.equal(1);
  });

  it('a later copy whose writer died before deleting it is deleted by the next flush that reads it', async () => {
    const org = randomUUID();
    const winner = view();
    await winner.ready(svc.client);
    await flush(winner, org, ['k']);
    // A dead writer's INSERT of the same id, committed after the winner's check: nobody will
    // delete it but a reader of its part.
    await insertEvents(svc.client, [chunk(org, ['k']).body]);
    expect(await copies(org)).to.deep.equal({ k: 2 });
    await flush(winner, org, ['other']);
    expect(await copies(org)).to.deep.equal({ k: 1, other: 1 });
    // The first copy stays: the one with the lowest block number.
    const rs = await svc.client.query({ query: "SELECT toUInt32(count()) AS n FROM events WHERE org_id = {org:UUID} AND message_id = 'k' AND _block_number = (SELECT min(_block_number) FROM events WHERE org_id = {org:UUID} AND message_id = 'k')", query_params: { org }, format: 'JSONEachRow' });
    expect(await rs.json()).to.deep.equal([{ n: 1 }]);
  });

  it('with no filter memory (cap 0) every key is looked up, and the guarantees are the same', async () => {
    const org = randomUUID();
    const v = view(0);
    expect(v.filtering).to.equal(false);
    expect((await flush(v, org, ['a', 'b', 'a'])).duplicates).to.equal(1);
    expect((await flush(v, org, ['a', 'c'])).duplicates).to.equal(1);
    expect(await copies(org)).to.deep.equal({ a: 1, b: 1, c: 1 });
  });

  it('the event claims are the events table (no narrow claim table, no third view)', async () => {
    const rs = await svc.client.query({
      query: "SELECT name FROM system.tables WHERE database = currentDatabase() AND name IN ('event_message_ids', 'event_message_ids_mv')",
      format: 'JSONEachRow',
    });
    expect(await rs.json()).to.deep.equal([]);
    expect(EVENT_CLAIMS.table).to.equal('events');
  });
});
