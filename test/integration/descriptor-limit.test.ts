import { expect } from 'chai';
import { connect, type Socket } from 'node:net';
import { request } from './harness.ts';
import { isAlive, startServiceProcess, type ServiceProcess } from './service-process.ts';

/**
 * `tallyhouse serve` under a real RLIMIT_NOFILE of 2,048 descriptors, flooded with 3,000 idle
 * connections (no token needed to open one). It used to run out of descriptors, take the failed
 * engine health ping for a dead engine, kill it, fail to respawn it (EMFILE) and crash on the
 * child's unhandled 'error' event.
 */
describe('descriptor exhaustion under a 2,048-descriptor limit', function () {
  this.timeout(300_000);
  let svc: ServiceProcess;

  before(async () => {
    svc = await startServiceProcess({ wrapper: ['prlimit', '--nofile=2048:2048', '--'] });
  });
  after(async () => {
    await svc?.cleanup();
  });

  it('keeps running with 3,000 idle connections, leaves the engine alone, and answers once they are gone', async () => {
    const listening = svc.logs().find((l) => l.msg === 'listening');
    expect(listening?.maxConnections, 'maxConnections derived from the 2,048 limit').to.be.a('number').and.below(2048);
    const enginePid = svc.engineState().pid;
    const { hostname, port } = new URL(svc.url);

    const sockets: Socket[] = [];
    const settled = (s: Socket) =>
      new Promise<'open' | 'refused'>((resolve) => {
        s.once('connect', () => resolve('open'));
        s.once('error', () => resolve('refused'));
        s.once('close', () => resolve('refused'));
      });
    const outcomes = await Promise.all(
      Array.from({ length: 3000 }, () => {
        const s = connect(Number(port), hostname);
        s.on('error', () => {});
        sockets.push(s);
        return settled(s);
      }),
    );
    expect(outcomes.filter((o) => o === 'open').length).to.be.above(1000);

    // Hold them over several engine health checks (one a second).
    await new Promise((r) => setTimeout(r, 4000));
    expect(svc.child.exitCode, 'the service is still running').to.equal(null);
    expect(svc.child.signalCode).to.equal(null);
    expect(isAlive(enginePid), 'the engine was not killed').to.equal(true);
    expect(svc.engineState().pid, 'the engine was not restarted').to.equal(enginePid);
    const restarts = svc.logs().filter((l) => /not answering|restarting|restart failed/.test(l.msg ?? ''));
    expect(restarts).to.deep.equal([]);

    for (const s of sockets) s.destroy();
    const res = await request(svc.url, 'POST', '/1.0/event', { token: svc.eventsToken, body: [{ type: 'track', event_name: 'after-flood' }] });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.count).to.equal(1);
    expect((await request(svc.url, 'GET', '/readyz')).status).to.equal(200);
  });
});
