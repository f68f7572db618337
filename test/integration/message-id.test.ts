import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { insertDataError } from '../../src/clickhouse/errors.ts';
import { GroupCommitter } from '../../src/events/group-commit.ts';
import { encodeEventChunk, EventChunk, insertOnce } from '../../src/events/message-ids.ts';
import { insertEvents } from '../../src/events/ingest.ts';
import { parseEventBatch } from '../../src/events/schema.ts';
import { tooLargeString } from './event-chunks.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * message_id: an item whose id the organization already stored (last 7 days) is not stored again,
 * whether it repeats in the same request, in a retried request, in a request of the same flush, or
 * in a flush that raced another one (another service instance) on the same database.
 */
describe('POST /1.0/event with message_id (exactly once)', () => {
  let svc: TestService;
  let token: string;
  before(async () => {
    svc = await startTestService();
    token = await svc.token(['events']);
  });
  after(() => svc.close());

  const post = (body: unknown, t = token) => svc.request('POST', '/1.0/event', { token: t, body });
  const copies = async (org: string) => {
    const rs = await svc.client.query({
      query: 'SELECT message_id, count() AS n FROM events WHERE org_id = {org:UUID} GROUP BY message_id ORDER BY message_id',
      query_params: { org },
      format: 'JSONEachRow',
    });
    return Object.fromEntries((await rs.json<{ message_id: string; n: string }>()).map((r) => [r.message_id, Number(r.n)]));
  };
  const track = (message_id?: string, name = 'signup') => ({ type: 'track', event_name: name, ...(message_id === undefined ? {} : { message_id }) });

  it('stores an id repeated in one request once: count = items accepted, duplicates = items not stored again', async () => {
    const org = randomUUID();
    const t = await svc.token(['events'], org);
    const res = await post([track('m1', 'first'), track('m1', 'second'), track('m2'), track()], t);
    expect(res.status).to.equal(200);
    expect(res.body).to.include({ count: 4, duplicates: 1 });
    expect(res.body.lag).to.be.a('number');
    expect(await copies(org)).to.deep.equal({ '': 1, m1: 1, m2: 1 });
    // The first occurrence is the one kept.
    const rs = await svc.client.query({ query: "SELECT event_name FROM events WHERE org_id = {org:UUID} AND message_id = 'm1'", query_params: { org }, format: 'JSONEachRow' });
    expect(await rs.json()).to.deep.equal([{ event_name: 'first' }]);
  });

  it('a retried request stores nothing again, visible to the very next query; items without message_id are stored again as before', async () => {
    const org = randomUUID();
    const t = await svc.token(['events'], org);
    const batch = [track('a'), track('b'), track('c'), track()];
    expect((await post(batch, t)).body).to.include({ count: 4, duplicates: 0 });
    const retry = await post(batch, t);
    expect(retry.status).to.equal(200);
    expect(retry.body).to.include({ count: 4, duplicates: 3 });
    expect(await copies(org)).to.deep.equal({ '': 2, a: 1, b: 1, c: 1 });
    // A partial overlap: only the new id is stored.
    expect((await post([track('c'), track('d')], t)).body).to.include({ count: 2, duplicates: 1 });
    expect(await copies(org)).to.deep.equal({ '': 2, a: 1, b: 1, c: 1, d: 1 });
  });

  it('SEARCH /1.0/event returns the stored message_id of each event (none when it had none)', async () => {
    const org = randomUUID();
    await post([track('read-me'), track()], await svc.token(['events'], org));
    const res = await svc.request('POST', '/1.0/event/search', { token: await svc.token(['events:read'], org), body: { size: 10 } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.hits.events.map((e: { message_id?: string }) => e.message_id ?? null).sort()).to.deep.equal(['read-me', null].sort());
  });

  it('ids are per organization: the same id in another organization is stored', async () => {
    const [orgA, orgB] = [randomUUID(), randomUUID()];
    const [tA, tB] = [await svc.token(['events'], orgA), await svc.token(['events'], orgB)];
    expect((await post([track('shared')], tA)).body).to.include({ duplicates: 0 });
    expect((await post([track('shared')], tB)).body).to.include({ duplicates: 0 });
    expect([await copies(orgA), await copies(orgB)]).to.deep.equal([{ shared: 1 }, { shared: 1 }]);
  });

  it('an id already stored is a duplicate whatever the event type and content', async () => {
    const org = randomUUID();
    const t = await svc.token(['events'], org);
    await post([{ type: 'page', url: 'https://e.com/', message_id: 'x' }], t);
    expect((await post([{ type: 'identify', user_alias: 'u', message_id: 'x' }], t)).body).to.include({ count: 1, duplicates: 1 });
    expect(await copies(org)).to.deep.equal({ x: 1 });
  });

  for (const [name, value] of [
    ['empty', ''],
    ['256 characters', 'm'.repeat(256)],
    ['a number', 42],
  ] as const) {
    it(`rejects a message_id that is ${name} with 400 naming it, storing nothing`, async () => {
      const org = randomUUID();
      const res = await post([track('ok'), { ...track(), message_id: value }], await svc.token(['events'], org));
      expect(res.status).to.equal(400);
      expect(JSON.stringify(res.body)).to.include('[1].message_id');
      expect(await copies(org)).to.deep.equal({});
    });
  }

  it('accepts a message_id of 255 characters', async () => {
    const org = randomUUID();
    const id = 'é'.repeat(255);
    expect((await post([track(id)], await svc.token(['events'], org))).status).to.equal(200);
    expect(await copies(org)).to.deep.equal({ [id]: 1 });
  });

  it('concurrent requests with new users and repeated ids (a flush numbering users while the one before reads its claims): each id once, each user one number', async () => {
    const org = randomUUID();
    const t = await svc.token(['events'], org);
    // Three waves of 24 concurrent requests, several flushes each: every request has users met for
    // the first time (a claims round before its INSERT, which overlaps the previous flush's claims
    // read), and the third wave sends the first wave's ids again.
    const body = (wave: number, i: number) =>
      Array.from({ length: 20 }, (_, k) => ({ type: 'track', event_name: 'e', user_alias: `u-${wave}-${i}-${k}`, message_id: `m-${(wave + i) % 2}-${i}-${k}` }));
    const results = [];
    for (let wave = 0; wave < 3; wave++) results.push(...(await Promise.all(Array.from({ length: 24 }, (_, i) => post(body(wave, i), t)))));
    for (const r of results) expect(r.status, JSON.stringify(r.body)).to.equal(200);
    const stored = await copies(org);
    expect(Object.keys(stored)).to.have.length(2 * 24 * 20);
    expect(Object.values(stored).every((n) => n === 1)).to.equal(true);
    expect(results.reduce((n, r) => n + r.body.count - r.body.duplicates, 0)).to.equal(2 * 24 * 20);
    const rs = await svc.client.query({
      query: `SELECT uniqExact(user_id) AS users, uniqExact(user_num) AS numbers, uniqExact(user_id, user_num) AS pairs, countIf(user_num = 0) AS unnumbered
              FROM events WHERE org_id = {org:UUID}`,
      query_params: { org },
      format: 'JSONEachRow',
    });
    const [n] = await rs.json<Record<string, string>>();
    expect(Number(n.unnumbered)).to.equal(0);
    expect(Number(n.numbers)).to.equal(Number(n.users));
    expect(Number(n.pairs)).to.equal(Number(n.users));
  });

  describe('below HTTP', () => {
    const chunk = (org: string, events: unknown[]) => encodeEventChunk(org, parseEventBatch(events), new Date());

    it('two flushes racing on the same ids (both look up before either commits) leave exactly one copy; the loser counts them as duplicates', async () => {
      const org = randomUUID();
      // A barrier: neither flush INSERTs before both have looked their ids up, as when two service
      // instances flush the same retried request at the same moment.
      let arrived = 0;
      let release!: () => void;
      const bothLookedUp = new Promise<void>((r) => (release = r));
      const racingInsert = async (bodies: Buffer[]) => {
        if (++arrived === 2) release();
        await bothLookedUp;
        await insertEvents(svc.client, bodies);
      };
      const a = chunk(org, [track('r1'), track('r2'), track('r3'), track()]);
      const b = chunk(org, [track('r2'), track('r3'), track('r4'), track()]);
      await Promise.all([insertOnce(svc.client, [a], racingInsert), insertOnce(svc.client, [b], racingInsert)]);
      expect(await copies(org)).to.deep.equal({ '': 2, r1: 1, r2: 1, r3: 1, r4: 1 });
      // r2 and r3 were stored by both flushes; the one that committed second deleted its copies.
      expect(a.duplicates + b.duplicates).to.equal(2);
      // Claims follow the rows: a later retry of r2 still finds one.
      const c = chunk(org, [track('r2')]);
      await insertOnce(svc.client, [c], (bodies) => insertEvents(svc.client, bodies));
      expect(c.duplicates).to.equal(1);
      expect(await copies(org)).to.deep.equal({ '': 2, r1: 1, r2: 1, r3: 1, r4: 1 });
    });

    it('requests of one flush sharing an id store it once, also when the flush is split around a request the engine refuses', async () => {
      const [org, bad] = [randomUUID(), randomUUID()];
      const committer = new GroupCommitter<EventChunk>((chunks) => insertOnce(svc.client, chunks, (bodies) => insertEvents(svc.client, bodies)), {
        maxRows: 10_000,
        delayMs: 20,
        maxQueuedRows: 100_000,
        maxConcurrentFlushes: 1,
        classify: insertDataError,
      });
      const good = chunk(bad, [track('z')]);
      // A string length past any limit: refused by ClickHouse (TOO_LARGE_STRING_SIZE), so the flush is split.
      const refused = new EventChunk(bad, tooLargeString(good.body), 1, good.keys, good.eventIds, good.offsets);
      const first = chunk(org, [track('s1'), track('s2')]);
      const second = chunk(org, [track('s2'), track('s3')]);
      const results = await Promise.allSettled([committer.submit(first, 2), committer.submit(refused, 1), committer.submit(second, 2)]);
      expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
      expect([first.duplicates, second.duplicates]).to.deep.equal([0, 1]);
      expect(await copies(org)).to.deep.equal({ s1: 1, s2: 1, s3: 1 });
      expect(await copies(bad)).to.deep.equal({});
    });
  });
});
