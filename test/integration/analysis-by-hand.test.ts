import { expect } from 'chai';
import { startTestService, type TestService } from './harness.ts';

type Rec = Record<string, any>;
const DAY = 86_400_000;

/**
 * Funnels as a dashboard user reads them, on a few users whose every step is counted by hand
 * here: the window's bound, steps out of order, a user entering twice, a step never reached, and
 * the rounding of a conversion.
 */
describe('funnels by hand (HTTP)', function () {
  this.timeout(180_000);
  let svc: TestService;
  let read: string;
  // Midnight UTC five days ago: every event stays within the 7 days a timestamp may be old.
  const base = Math.floor(Date.now() / DAY) * DAY - 5 * DAY;
  const at = (day: number, second: number) => new Date(base + day * DAY + second * 1000).toISOString();

  before(async () => {
    svc = await startTestService();
    read = await svc.token(['events:read']);
    const events: Rec[] = [];
    const e = (user: string, name: string, day: number, second: number) => events.push({ type: 'track', event_name: name, user_alias: user, timestamp: at(day, second) });
    e('f1', 'a', 0, 0); e('f1', 'b', 0, 50); e('f1', 'c', 0, 100); // c exactly at the 100 s bound: all three steps
    e('f2', 'a', 0, 0); e('f2', 'b', 0, 50); e('f2', 'c', 0, 101); // c 1 s past it: two steps
    e('f3', 'b', 0, 0); e('f3', 'a', 0, 10); e('f3', 'c', 0, 20); // b before a: one step in order, three in any order
    e('f4', 'a', 0, 0); e('f4', 'a', 1, 0); e('f4', 'b', 1, 10); // enters twice, the second attempt converts in 10 s
    e('f5', 'a', 0, 0); // never reaches b
    e('f6', 'a', 0, 0); e('f6', 'x', 0, 5); e('f6', 'b', 0, 10); // x between: not strictly consecutive
    // 800 users enter 'enter', 57 of them 'convert' (57 / 800 = 0.07125 exactly).
    for (let i = 0; i < 800; i++) e(`g${i}`, 'enter', 2, i);
    for (let i = 0; i < 57; i++) e(`g${i}`, 'convert', 2, 1000 + i);
    const write = await svc.token(['events']);
    for (let i = 0; i < events.length; i += 100) {
      const res = await svc.request('POST', '/1.0/event', { token: write, body: events.slice(i, i + 100) });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
    }
  });
  after(() => svc.close());

  const steps = (...names: string[]) => names.map((n) => ({ filters: [{ key: 'event_name', operator: 'eq', value: n }] }));
  const funnel = async (body: Rec) => {
    const res = await svc.request('SEARCH', '/1.0/event/funnel', { token: read, body: { range: { field: 'timestamp', start: new Date(base).toISOString(), end: new Date().toISOString() }, ...body } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.steps.map((s: Rec) => [s.users, s.conversion_from_first, s.conversion_from_previous, s.median_seconds_from_previous, s.p90_seconds_from_previous]);
  };

  it('ordered: the window is inclusive, a later attempt counts, times from the previous step', async () => {
    // a: f1..f6; b within 100 s after a: f1 (50 s), f2 (50 s), f4 (10 s), f6 (10 s); c: f1 only.
    expect(await funnel({ steps: steps('a', 'b', 'c'), window_seconds: 100 })).to.deep.equal([
      [6, 1, 1, null, null],
      [4, 0.6667, 0.6667, 30, 50], // times 10, 10, 50, 50: median 30, p90 interpolated 50
      [1, 0.1667, 0.25, 50, 50],
    ]);
  });

  it('strict and any order', async () => {
    // strict: b must be the next event: f1, f2, f4 (a on day 1, then b); f6 has x between.
    expect(await funnel({ steps: steps('a', 'b', 'c'), window_seconds: 100, order: 'strict' })).to.deep.equal([
      [6, 1, 1, null, null],
      [3, 0.5, 0.5, 50, 50],
      [1, 0.1667, 0.3333, 50, 50],
    ]);
    // any: a and b within 100 s in any order: f1, f2, f3, f4, f6; all three: f1, f3.
    expect(await funnel({ steps: steps('a', 'b', 'c'), window_seconds: 100, order: 'any' })).to.deep.equal([
      [6, 1, 1, null, null],
      [5, 0.8333, 0.8333, null, null],
      [2, 0.3333, 0.4, null, null],
    ]);
  });

  it('the same event twice is two steps: only f4 did a twice, 86400 s apart', async () => {
    expect(await funnel({ steps: steps('a', 'a'), window_seconds: 86_400 })).to.deep.equal([[6, 1, 1, null, null], [1, 0.1667, 0.1667, 86_400, 86_400]]);
    expect(await funnel({ steps: steps('a', 'a'), window_seconds: 86_399 })).to.deep.equal([[6, 1, 1, null, null], [0, 0, 0, null, null]]);
  });

  it('a conversion is rounded half up exactly: 57 of 800 is 0.0713', async () => {
    const [first, second] = await funnel({ steps: steps('enter', 'convert'), window_seconds: 3600 });
    expect(first[0]).to.equal(800);
    expect(second.slice(0, 3)).to.deep.equal([57, 0.0713, 0.0713]);
  });
});
