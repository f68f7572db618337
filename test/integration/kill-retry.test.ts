import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { request, startTestService, TEST_DATA_DIR, type TestService } from './harness.ts';
import { stopProcess, track } from './processes.ts';

const BIN = fileURLToPath(new URL('../../bin/tallyhouse.js', import.meta.url));

/**
 * A real `tallyhouse serve` process on the shared test engine and the suite's database; resolves
 * with its URL. The process is added to `started` at once, so that the suite stops it even when it
 * never gets ready.
 */
async function startServe(database: string, started: ChildProcess[]): Promise<{ proc: ChildProcess; url: string }> {
  const proc = track(spawn(process.execPath, [BIN, 'serve'], {
    env: { ...process.env, DATA_DIR: TEST_DATA_DIR, CLICKHOUSE_DATABASE: database, PORT: '0', LOG_LEVEL: 'info', RATE_LIMIT_EVENTS: '1000000' },
    stdio: ['ignore', 'ignore', 'pipe'],
  }));
  started.push(proc);
  let log = '';
  return new Promise((resolve, reject) => {
    const onData = (d: Buffer) => {
      log += d;
      const m = /"msg":"listening"[^\n]*"port":(\d+)/.exec(log);
      if (m) {
        proc.stderr!.off('data', onData);
        proc.stderr!.resume(); // keep reading (one log line per request), never block the service on a full pipe
        resolve({ proc, url: `http://127.0.0.1:${m[1]}` });
      } else if (log.length > 1_000_000) log = log.slice(-10_000);
    };
    proc.stderr!.on('data', onData);
    proc.once('exit', (code) => reject(new Error(`serve exited (${code}) before listening: ${log.slice(-2000)}`)));
  });
}

/**
 * SIGKILL of a service under load, clients retrying on another instance of the same database: every
 * batch is eventually acknowledged, and the table then holds every event exactly once. The kill
 * lands while requests are in flight, some of them committed but not yet answered: their retries
 * on the other instance must be recognised by message_id.
 */
describe('SIGKILL under load, retries on another instance (message_id)', function () {
  this.timeout(180_000);
  let svc: TestService;
  let a: { proc: ChildProcess; url: string };
  let b: { proc: ChildProcess; url: string };
  const started: ChildProcess[] = [];

  before(async () => {
    svc = await startTestService();
    a = await startServe(svc.database, started);
    b = await startServe(svc.database, started);
  });
  // Also after a set-up that failed half-way: every process started is stopped.
  after(async () => {
    await Promise.all(started.map((proc) => stopProcess(proc)));
    await svc?.close();
  });

  it('0 lost, 0 duplicated', async () => {
    const token = await svc.token(['events']);
    const CLIENTS = 4;
    const BATCHES = 12; // per client, 100 events each: 4,800 events in all
    const batch = (client: number, n: number) =>
      Array.from({ length: 100 }, (_, i) => ({ type: 'track', event_name: 'load', message_id: `c${client}-b${n}-i${i}` }));

    let killed = false;
    let sentBeforeKill = 0;
    const retried = { batches: 0 };
    let reportedDuplicates = 0;
    // Each client sends its batches in turn, to A until A is killed; a batch that got no 200
    // (connection reset, refused) is resent as it was, to B, until it gets one.
    const client = async (c: number) => {
      for (let n = 0; n < BATCHES; n++) {
        const body = batch(c, n);
        let target = killed ? b.url : a.url;
        for (let attempt = 0; ; attempt++) {
          const res = await request(target, 'POST', '/1.0/event', { token, body }).catch(() => undefined);
          if (res?.status === 200) {
            expect(res.body.count).to.equal(100);
            reportedDuplicates += res.body.duplicates;
            break;
          }
          if (attempt === 0) retried.batches++;
          if (attempt > 50) throw new Error(`batch ${c}/${n} never acknowledged: ${res?.status} ${JSON.stringify(res?.body)}`);
          target = b.url;
          await new Promise((r) => setTimeout(r, 20));
        }
        if (!killed) sentBeforeKill++;
      }
    };
    const kill = (async () => {
      // Kill once a third of the batches were acknowledged: under load, with requests in flight.
      while (sentBeforeKill < (CLIENTS * BATCHES) / 3) await new Promise((r) => setTimeout(r, 5));
      a.proc.kill('SIGKILL');
      killed = true;
    })();
    await Promise.all([...Array.from({ length: CLIENTS }, (_, c) => client(c)), kill]);

    expect(a.proc.signalCode ?? (await new Promise((r) => a.proc.once('exit', (_code, signal) => r(signal))))).to.equal('SIGKILL');
    // The kill hit requests in flight (else this proves nothing).
    expect(retried.batches).to.be.greaterThan(0);
    const rs = await svc.client.query({
      query: 'SELECT count() AS stored, uniqExact(message_id) AS distinct_ids FROM events WHERE org_id = {org:UUID}',
      query_params: { org: svc.orgId },
      format: 'JSONEachRow',
    });
    const [{ stored, distinct_ids }] = await rs.json<{ stored: string; distinct_ids: string }>();
    expect({ stored: Number(stored), distinct: Number(distinct_ids) }).to.deep.equal({ stored: CLIENTS * BATCHES * 100, distinct: CLIENTS * BATCHES * 100 });
    // Retries of batches committed before the kill but never answered come back as duplicates.
    expect(reportedDuplicates).to.be.at.most(retried.batches * 100);
  });
});
