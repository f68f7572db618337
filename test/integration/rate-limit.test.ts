import { expect } from 'chai';
import { startTestService, type TestService } from './harness.ts';

describe('rate limits (HTTP)', () => {
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ RATE_LIMIT_EVENTS: '5', RATE_LIMIT_RELEASES: '3' });
  });
  after(() => svc.close());

  it('answers 429 with Retry-After and RateLimit-* headers past the per-token limit, storing nothing of the rejected requests', async () => {
    const token = await svc.token(['events']);
    const marker = `rl-${Date.now()}`;
    const results = await Promise.all(
      Array.from({ length: 12 }, () => svc.request('POST', '/1.0/event', { token, body: [{ type: 'track', event_name: marker }, { type: 'track', event_name: marker }] })),
    );
    const ok = results.filter((r) => r.status === 200);
    const limited = results.filter((r) => r.status === 429);
    expect(ok.length).to.equal(5);
    expect(limited.length).to.equal(7);
    for (const r of limited) {
      expect(r.body.error.code).to.equal('rate_limited');
      expect(Number(r.headers.get('retry-after'))).to.be.within(1, 1);
      expect(r.headers.get('ratelimit-limit')).to.equal('5');
      expect(r.headers.get('ratelimit-remaining')).to.equal('0');
      expect(Number(r.headers.get('ratelimit-reset'))).to.be.within(1, 1);
    }
    expect(ok[0].headers.get('ratelimit-limit')).to.equal('5');
    const stored = await (await svc.client.query({ query: 'SELECT count() AS c FROM events WHERE event_name = {m:String}', query_params: { m: marker }, format: 'JSONEachRow' })).json<{ c: string }>();
    expect(Number(stored[0].c)).to.equal(ok.length * 2);
  });

  it('counts per token, and admits again after the window', async function () {
    this.timeout(10_000);
    const a = await svc.token(['events']);
    const b = await svc.token(['events']);
    const burst = (token: string) => Promise.all(Array.from({ length: 6 }, () => svc.request('POST', '/1.0/event', { token, body: [{ type: 'track', event_name: 'x' }] })));
    const [ra, rb] = await Promise.all([burst(a), burst(b)]);
    expect(ra.filter((r) => r.status === 200).length).to.equal(5);
    expect(rb.filter((r) => r.status === 200).length).to.equal(5);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await svc.request('POST', '/1.0/event', { token: a, body: [{ type: 'track', event_name: 'x' }] })).status).to.equal(200);
  });

  it('limits releases separately', async () => {
    const token = await svc.token(['releases']);
    const results = await Promise.all(Array.from({ length: 5 }, () => svc.request('GET', '/1.0/release', { token })));
    expect(results.map((r) => r.status).sort()).to.deep.equal([200, 200, 200, 429, 429]);
  });
});
