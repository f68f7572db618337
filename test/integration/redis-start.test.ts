import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../src/ports.ts';
import { startServiceProcess, type ServiceProcess } from './service-process.ts';
import { stopProcess, track } from './processes.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * docs/operations.md (several instances): with Redis unreachable an instance keeps serving on its
 * own limits, logs `redis unreachable` and says so in /readyz. Also when Redis was never reached,
 * from the start (a wrong address, or credentials in REDIS_URL that Redis refuses): the log line
 * then names the cause, so the operator learns why the limits are not shared.
 */
describe('REDIS_URL that does not work from the start: the service serves on its own limits, logs why, says so in /readyz', function () {
  this.timeout(180_000);
  let redis: ChildProcess | undefined;
  const services: ServiceProcess[] = [];
  after(async () => {
    await Promise.all(services.map((s) => s.cleanup()));
    await stopProcess(redis);
  });

  it('wrong password, and nothing listening: one warning each naming the cause; requests answered; readyz local', async () => {
    const [redisPort, closedPort] = [await freePort(), await freePort()];
    redis = track(spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--requirepass', 'right-password'], { stdio: 'ignore' }));
    redis.on('error', (err) => console.error(`redis-server: ${err.message}`));
    const cases: Array<[string, string, RegExp]> = [
      ['wrong password', `redis://:wrong-password@127.0.0.1:${redisPort}`, /WRONGPASS|invalid password|NOAUTH/i],
      ['nothing listening', `redis://127.0.0.1:${closedPort}`, /ECONNREFUSED/],
    ];
    for (const [, url] of cases) services.push(await startServiceProcess({ env: { REDIS_URL: url, TALLYHOUSE_DEMO: '1' } }));
    for (const [i, [what, , cause]] of cases.entries()) {
      const svc = services[i];
      const warned = () => svc.logs().filter((l) => String(l.msg).startsWith('redis unreachable'));
      // Waits for the line (the checks run once a second); the bound only turns a hang into a message.
      for (const until = Date.now() + 60_000; warned().length === 0; await sleep(200)) {
        if (Date.now() > until) throw new Error(`${what}: no "redis unreachable" line in the log:\n${JSON.stringify(svc.logs())}`);
      }
      expect(warned(), what).to.have.length(1);
      expect(warned()[0].level, what).to.equal('warn');
      expect(String(warned()[0].error), what).to.match(cause);
      const ready = await (await fetch(`${svc.url}/readyz`)).json();
      expect(ready, what).to.include({ status: 'ready', rate_limits: 'local (redis unreachable)' });
      const res = await fetch(`${svc.url}/1.0/event`, {
        method: 'POST',
        headers: { authorization: `Bearer ${svc.eventsToken}`, 'content-type': 'application/json' },
        body: JSON.stringify([{ type: 'track', event_name: 'redis-start' }]),
      });
      expect(res.status, what).to.equal(200);
      expect(svc.logs().some((l) => String(l.msg).startsWith('redis reachable')), what).to.equal(false);
    }
  });
});
