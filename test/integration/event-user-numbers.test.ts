import { expect } from 'chai';
import fc from 'fast-check';
import type { ClickHouseClient } from '@clickhouse/client';
import type { RunQuery } from '../../src/clickhouse/sql.ts';
import { queryRows } from '../../src/query/request-cache.ts';
import { formatDb, fromMillis } from '../../src/time/iso.ts';
import { runEventAggregation, type EventGroupByRule } from '../../src/events/read/aggregation.ts';
import type { EventSelection } from '../../src/events/read/source.ts';
import { userIdBytes } from '../../src/events/rows.ts';
import { encodeEventBatch } from '../../src/events/encode.ts';
import { needsNumbers, numberUsers, UserNumbers } from '../../src/events/user-numbers.ts';
import { READ_SETTINGS } from '../../src/query/settings.ts';
import { request, startTestService, type TestService } from './harness.ts';
import { startServiceProcess, type ServiceProcess } from './service-process.ts';
import { withEngine } from './survey-load.ts';

/**
 * Dense user numbers (src/events/user-numbers.ts) and unique users from the hours' bitmaps
 * (src/events/read/user-hours.ts): the bitmaps' answer against uniqExact of the user ids over the
 * rows on random events, ranges and histograms, before and after user deletions; the allocator's
 * rule (one number per user, one user per number) under writers that race.
 */
const HOUR = 3_600_000;
const now = Date.now();
const span = 6 * 24 * HOUR;

/** Known users with two numbers, numbers with two users, known users without a number, in the stored events. */
async function numberingFaults(client: ClickHouseClient): Promise<{ twoNumbers: number; twoUsers: number; unnumbered: number; notTheClaim: number }> {
  const one = async (query: string) => Number((await (await client.query({ query, format: 'JSONEachRow' })).json<{ n: string }>())[0].n);
  return {
    twoNumbers: await one('SELECT count() AS n FROM (SELECT org_id, user_id FROM events WHERE anonymous = 0 GROUP BY org_id, user_id HAVING uniqExact(user_num) > 1)'),
    twoUsers: await one('SELECT count() AS n FROM (SELECT org_id, user_num FROM events WHERE anonymous = 0 GROUP BY org_id, user_num HAVING uniqExact(user_id) > 1)'),
    unnumbered: await one('SELECT count() AS n FROM events WHERE anonymous = 0 AND user_num = 0'),
    // Each stored number is the user's valid claim (the rule as one query).
    notTheClaim: await one(
      `SELECT count() AS n FROM (SELECT DISTINCT org_id, user_id, user_num FROM events WHERE anonymous = 0) AS e
       LEFT JOIN (SELECT org_id, user_id, argMin(num, _block_number) AS valid_num FROM event_user_numbers
                  WHERE (org_id, num, _block_number) IN (SELECT org_id, num, min(_block_number) FROM event_user_numbers GROUP BY org_id, num)
                  GROUP BY org_id, user_id) AS c ON c.org_id = e.org_id AND c.user_id = e.user_id
       WHERE c.valid_num != e.user_num SETTINGS join_use_nulls = 0`,
    ),
  };
}

describe('unique users from dense user numbers agree with uniqExact over the rows', () => {
  let svc: TestService;
  let write: string;
  let run: RunQuery;

  const post = async (items: unknown[]) => {
    for (let i = 0; i < items.length; i += 100) {
      const res = await svc.request('POST', '/1.0/event', { token: write, body: items.slice(i, i + 100) });
      expect(res.status, JSON.stringify(res.body).slice(0, 500)).to.equal(200);
    }
  };
  /** Random events: known users u0..u39 (some repeat often), anonymous ones, some on exact hour starts. */
  const events = (seed: number, count: number) => {
    const base = Math.floor((now - span) / HOUR) * HOUR + HOUR;
    return fc.sample(fc.tuple(fc.integer({ min: 0, max: span }), fc.integer({ min: 0, max: 39 }), fc.boolean(), fc.integer({ min: 0, max: 9 })), { numRuns: count, seed }).map(([offset, user, onHour, kind]) => {
      const t = Math.min(onHour ? base + Math.floor(offset / HOUR) * HOUR : base + offset, now - 1000);
      return { type: 'track', event_name: 'e', ...(kind < 2 ? {} : { user_alias: `u${user % (kind < 5 ? 5 : 40)}` }), timestamp: new Date(t).toISOString() };
    });
  };

  before(async function () {
    this.timeout(120_000);
    svc = await startTestService();
    write = await svc.token(['events']);
    run = (q) => queryRows(svc.client, q, READ_SETTINGS);
    await post(events(7, 700));
  });
  after(() => svc.close());

  const instant = fc.integer({ min: now - span - 2 * HOUR, max: now + HOUR }).map((ms) => formatDb(fromMillis(ms)));
  const scope = fc.record({ range: fc.option(fc.tuple(instant, instant).map(([a, b]) => (a <= b ? { start: a, end: b } : { start: b, end: a })), { nil: undefined }) });
  const timestampRule = fc.record({ field: fc.constant('timestamp' as const), minInterval: fc.constantFrom('hour' as const, 'day' as const), buckets: fc.integer({ min: 1, max: 100 }) });
  const rules = fc.oneof(fc.tuple(timestampRule), fc.tuple(timestampRule, timestampRule));
  const sorted = (rows: unknown[]) => rows.map((r) => JSON.stringify(r)).sort();
  const agree = (numRuns: number) =>
    fc.assert(
      fc.asyncProperty(scope, rules, async (s, r) => {
        const selection: EventSelection = { orgId: svc.orgId, filters: [], filtersBool: 'AND', ...s };
        const fromBitmaps = await runEventAggregation(run, selection, r as EventGroupByRule[], ['count', 'unique_users']);
        const fromRows = await runEventAggregation(run, selection, r as EventGroupByRule[], ['count', 'unique_users'], run, { hours: false });
        expect(sorted(fromBitmaps.rows)).to.deep.equal(sorted(fromRows.rows));
      }),
      {
        numRuns,
        // Two levels with the same series (5 hourly buckets of 115 hours are days): over the rows
        // one expression twice once the parameters are in, which the ranked buckets keep apart.
        examples: [[{ range: { start: formatDb(fromMillis(now - 5 * 24 * HOUR + 1234)), end: formatDb(fromMillis(now - 5 * 24 * HOUR + 1234 + 115 * HOUR)) } },
          [{ field: 'timestamp', minInterval: 'day', buckets: 5 }, { field: 'timestamp', minInterval: 'hour', buckets: 5 }]]],
      },
    );

  it('every known user has one number, and each number one user', async () => {
    expect(await numberingFaults(svc.client)).to.deep.equal({ twoNumbers: 0, twoUsers: 0, unnumbered: 0, notTheClaim: 0 });
  });

  it('the bitmaps answer what the rows answer, bucket by bucket (property)', async function () {
    this.timeout(300_000);
    await agree(60);
  });

  it('the read is served by the event_user_hours projection', async function () {
    const read = await svc.token(['events:read']);
    const body = { range: { start: new Date(now - 3 * 24 * HOUR + 1234).toISOString(), end: new Date(now).toISOString() }, group_by: [{ field: 'timestamp', date_histogram_min_interval: 'day', date_histogram_buckets: 4 }], metrics: ['unique_users'] };
    const res = await request(svc.url, 'SEARCH', '/1.0/event/aggregation', { token: read, body });
    expect(res.status).to.equal(200);
    await svc.client.command({ query: 'SYSTEM FLUSH LOGS' });
    const rs = await svc.client.query({
      query: `SELECT arrayJoin(projections) AS p FROM system.query_log WHERE type = 'QueryFinish' AND current_database = currentDatabase() AND query LIKE '%groupBitmapStateIf%' AND event_time > now() - 60`,
      format: 'JSONEachRow',
    });
    expect((await rs.json<{ p: string }>()).map((r) => r.p)).to.include(`${svc.database}.events.event_user_hours`);
  });

  it('deleted users leave the bitmaps with their events; a returning user counts again (property)', async function () {
    this.timeout(300_000);
    for (const alias of ['u1', 'u17']) expect((await svc.request('DELETE', `/1.0/user/${alias}`, { token: await svc.token(['events']) })).status).to.equal(202);
    await agree(30);
    await post(events(8, 200));
    await agree(20);
    expect(await numberingFaults(svc.client)).to.deep.equal({ twoNumbers: 0, twoUsers: 0, unnumbered: 0, notTheClaim: 0 });
  });
});

describe('dense user numbers: the allocator under writers that race', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.close());

  const ids = (org: string, from: number, to: number) => Array.from({ length: to - from }, (_, i) => Buffer.from(userIdBytes(org, `r${from + i}`)).toString('latin1'));

  it('two views (their own maps, as two processes), overlapping new users at once: one number per user, one user per number', async () => {
    const org = svc.orgId;
    const a = new UserNumbers({ maxUsers: 1_000_000 });
    const b = new UserNumbers({ maxUsers: 1_000_000 });
    const capped = new UserNumbers({ maxUsers: 0 });
    const got: Map<string, number>[] = [];
    for (let round = 0; round < 6; round++) {
      const batches = [ids(org, round * 20, round * 20 + 30), ids(org, round * 20 + 10, round * 20 + 40), ids(org, round * 20 + 5, round * 20 + 35)];
      got.push(...(await Promise.all([a.numbers(svc.client, org, batches[0]), b.numbers(svc.client, org, batches[1]), capped.numbers(svc.client, org, batches[2])])));
    }
    const byUser = new Map<string, number>();
    for (const m of got) for (const [u, n] of m) {
      expect(byUser.get(u) ?? n, 'a user got two numbers').to.equal(n);
      byUser.set(u, n);
    }
    expect(new Set(byUser.values()).size, 'a number went to two users').to.equal(byUser.size);
    // A fresh view (a restart) reads the same numbers from the log.
    const again = await new UserNumbers({ maxUsers: 1_000_000 }).numbers(svc.client, org, [...byUser.keys()]);
    expect(new Map([...again].sort())).to.deep.equal(new Map([...byUser].sort()));
    expect(a.stats().lookedUp).to.equal(0);
    expect(capped.stats().users).to.equal(0);
  });

  it('a view that is behind proposes numbers another writer took meanwhile: it loses, proposes again, and agrees', async () => {
    const org = svc.orgId;
    const stale = new UserNumbers({ maxUsers: 1_000_000 });
    const other = new UserNumbers({ maxUsers: 1_000_000 });
    await stale.numbers(svc.client, org, ids(org, 1000, 1001));
    // Committed after the stale view read the log: it proposes the same numbers for other users.
    const taken = await other.numbers(svc.client, org, ids(org, 1001, 1011));
    const mine = await stale.numbers(svc.client, org, ids(org, 1006, 1021));
    expect(stale.stats().lost).to.be.greaterThan(0);
    for (const [u, n] of mine) if (taken.has(u)) expect(n).to.equal(taken.get(u));
    const all = [...taken, ...mine];
    expect(new Set(all.map(([, n]) => n)).size).to.equal(new Set(all.map(([u]) => u)).size);
  });
  it('a waiting chunk whose users are all held is numbered by needsNumbers, as numberUsers numbers it (numberUsers then skips it)', async () => {
    const org = crypto.randomUUID();
    const numbers = new UserNumbers({ maxUsers: 1_000_000 });
    const items = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => ({ type: 'track', event_name: 'e', user_alias: `w${from + i}` }));
    const chunk = (from: number, to: number) => encodeEventBatch([...items(from, to), { type: 'page', url: 'https://x.test/' }], org, new Date());
    const userNums = (c: ReturnType<typeof chunk>) => Array.from({ length: c.rows }, (_, r) => c.body.readUInt32LE(c.offsets![r + 1] - 4));
    await numberUsers(svc.client, [chunk(0, 30)], numbers);
    // Held users only: numbered while waiting; one new user: not complete, numbered by the flush.
    const [held, reference, partly] = [chunk(5, 25), chunk(5, 25), chunk(20, 40)];
    expect(needsNumbers([held], numbers)).to.equal(false);
    expect(needsNumbers([partly], numbers)).to.equal(true);
    await numberUsers(svc.client, [reference], new UserNumbers({ maxUsers: 1_000_000 }));
    await numberUsers(svc.client, [held, partly], numbers);
    expect(userNums(held)).to.deep.equal(userNums(reference));
    expect(userNums(held).slice(0, -1).every((n) => n > 0)).to.equal(true);
    expect(userNums(held).at(-1), 'anonymous').to.equal(0);
    const byRule = await new UserNumbers({ maxUsers: 0 }).numbers(svc.client, org, Array.from({ length: 20 }, (_, i) => partly.userKey(i)!));
    expect(userNums(partly).slice(0, -1)).to.deep.equal(Array.from({ length: 20 }, (_, i) => byRule.get(partly.userKey(i)!)));
  });
});

describe('dense user numbers: a lone writer applies its own claims from the parts list', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
    // A merge that takes a round's part before the parts list is read sends that round to the
    // read (also correct): stopped, so that which rounds go which way is decided by the writers.
    await svc.client.command({ query: 'SYSTEM STOP MERGES event_user_numbers' });
  });
  after(async () => {
    await svc.client.command({ query: 'SYSTEM START MERGES event_user_numbers' });
    await svc.close();
  });

  const ids = (org: string, from: number, to: number) => Array.from({ length: to - from }, (_, i) => Buffer.from(userIdBytes(org, `p${from + i}`)).toString('latin1'));
  /** The numbers by the rule as one query (a view that holds nothing looks every user up). */
  const byRule = (org: string, users: string[]) => new UserNumbers({ maxUsers: 0 }).numbers(svc.client, org, users);

  it('alone: no read; another writer in between: the next round reads, loses what was taken, and agrees with the rule', async () => {
    const org = svc.orgId;
    const other = crypto.randomUUID();
    const a = new UserNumbers({ maxUsers: 1_000_000 });
    const b = new UserNumbers({ maxUsers: 1_000_000 });
    const first = await a.numbers(svc.client, org, ids(org, 0, 20));
    const second = await a.numbers(svc.client, org, ids(org, 20, 30));
    await a.numbers(svc.client, other, ids(other, 0, 5));
    expect(a.stats()).to.include({ alone: 3, read: 0, lost: 0 });
    // b, loaded now, takes numbers a does not know of (a's map is behind), some for a's next users.
    const taken = await b.numbers(svc.client, org, ids(org, 25, 45));
    const third = await a.numbers(svc.client, org, ids(org, 40, 60));
    // Read once; the lost proposals went again, alone from the watermark the read moved.
    expect(a.stats()).to.include({ read: 1, alone: 4 });
    expect(a.stats().lost).to.be.greaterThan(0);
    for (const [u, n] of third) if (taken.has(u)) expect(n, 'a user taken by the other writer keeps its number').to.equal(taken.get(u));
    const all = new Map([...first, ...second, ...taken, ...third]);
    expect(new Set(all.values()).size, 'a number went to two users').to.equal(all.size);
    const rule = await byRule(org, [...all.keys()]);
    expect(new Map([...rule].sort())).to.deep.equal(new Map([...all].sort()));
    await a.numbers(svc.client, org, ids(org, 70, 80));
    expect(a.stats()).to.include({ alone: 5, read: 1 });
  });

  it('a round of its own process committed meanwhile (two flushes at once) is read, not taken for its own', async () => {
    const org = crypto.randomUUID();
    const a = new UserNumbers({ maxUsers: 1_000_000 });
    await a.numbers(svc.client, org, ids(org, 0, 1));
    const rounds = await Promise.all([a.numbers(svc.client, org, ids(org, 100, 130)), a.numbers(svc.client, org, ids(org, 120, 150))]);
    const all = new Map<string, number>();
    for (const m of rounds) for (const [u, n] of m) {
      expect(all.get(u) ?? n, 'a user got two numbers').to.equal(n);
      all.set(u, n);
    }
    expect(new Set(all.values()).size).to.equal(all.size);
    // Both started from the same watermark: the second to check read, whatever the order.
    expect(a.stats().read).to.be.at.least(1);
    const rule = await byRule(org, [...all.keys()]);
    expect(new Map([...rule].sort())).to.deep.equal(new Map([...all].sort()));
  });
});

describe('dense user numbers: two service processes on one engine', function () {
  this.timeout(300_000);
  let first: ServiceProcess | undefined;
  let second: ServiceProcess | undefined;
  after(async () => {
    await second?.cleanup();
    await first?.cleanup();
  });

  it('concurrent POST /1.0/event through both, the same new users: no number given to two users, none to one user twice', async () => {
    const env = { RATE_LIMIT_EVENTS: '100000', INGEST_MAX_CONCURRENT_FLUSHES: '4', INGEST_BATCH_DELAY_MS: '1' };
    first = await startServiceProcess({ env });
    second = await startServiceProcess({ env, dataDir: first.dataDir });
    const token = first.eventsToken;
    const posts: Promise<{ status: number }>[] = [];
    for (let i = 0; i < 40; i++) {
      const target = i % 2 ? second : first;
      const body = Array.from({ length: 50 }, (_, k) => ({ type: 'track', event_name: 'race', user_alias: `racer-${(i * 7 + k * 13) % 300}` }));
      posts.push(request(target.url, 'POST', '/1.0/event', { token, body }));
    }
    for (const res of await Promise.all(posts)) expect(res.status).to.equal(200);
    const faults = await withEngine(first.dataDir, (client) => numberingFaults(client));
    expect(faults).to.deep.equal({ twoNumbers: 0, twoUsers: 0, unnumbered: 0, notTheClaim: 0 });
  });
});
