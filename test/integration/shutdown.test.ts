import type { ClickHouseClient } from '@clickhouse/client';
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { Agent, get, request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { connectDatabase } from '../../src/clickhouse/connection.ts';
import { ENGINE_KEEP_ALIVE_TIMEOUT_S, findRunningEngine } from '../../src/clickhouse/engine.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { isAlive, startServiceProcess, type ServiceProcess } from './service-process.ts';
import { mintOrgToken, pendingSlices, rollupDiffersFromRaw, storedIds, surveyWriteLoad, waitFor, withEngine } from './survey-load.ts';

interface Outcome {
  name: string;
  status: number | 'connection-error';
  /** The answer asked to close the connection. */
  closed: boolean;
}

/** One POST /1.0/event on a kept-alive connection of `agent`; each request names its events uniquely. */
function postEvents(svc: ServiceProcess, agent: Agent, name: string, events: number): Promise<Outcome> {
  const body = JSON.stringify(Array.from({ length: events }, () => ({ type: 'track', event_name: name })));
  return new Promise((resolve) => {
    const req = httpRequest(
      `${svc.url}/1.0/event`,
      { method: 'POST', agent, headers: { authorization: `Bearer ${svc.eventsToken}`, 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ name, status: res.statusCode!, closed: res.headers.connection === 'close' }));
        res.on('error', () => resolve({ name, status: 'connection-error', closed: true }));
      },
    );
    req.on('error', () => resolve({ name, status: 'connection-error', closed: true }));
    req.end(body);
  });
}

/**
 * `loops` clients, each sending requests one after the other on its own kept-alive connection
 * until its connection is refused. Resolves with every outcome once all have stopped.
 */
function keepAliveLoad(svc: ServiceProcess, loops: number, eventsPerRequest: number) {
  const outcomes: Outcome[] = [];
  const agent = new Agent({ keepAlive: true, maxSockets: loops });
  const done = Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      for (let i = 0; ; i++) {
        const outcome = await postEvents(svc, agent, `shutdown-${loop}-${i}`, eventsPerRequest);
        outcomes.push(outcome);
        if (outcome.status === 'connection-error') return;
      }
    }),
  ).finally(() => agent.destroy());
  return { outcomes, done };
}

/** Reads the stopped service's data directory through a new engine. */
async function storedCounts(dataDir: string): Promise<Map<string, number>> {
  const db = await connectDatabase(loadConfig({ DATA_DIR: dataDir }), createLogger('silent'), { supervise: false });
  try {
    const client: ClickHouseClient = db.client();
    const rows = await (
      await client.query({ query: "SELECT event_name, count() AS c FROM events WHERE startsWith(event_name, 'shutdown-') GROUP BY event_name", format: 'JSONEachRow' })
    ).json<{ event_name: string; c: string }>();
    return new Map(rows.map((r) => [r.event_name, Number(r.c)]));
  } finally {
    await db.close();
  }
}

/**
 * A raw connection that sends a POST /1.0/event's head and `send` bytes of a body of
 * `contentLength`, then nothing more, and stays open. `answer`: the status line once the service
 * answered; `closed` resolves when the service closes the connection.
 */
async function stalledUpload(svc: ServiceProcess, contentLength: number, send: number) {
  const socket: Socket = connect(Number(new URL(svc.url).port), '127.0.0.1');
  let received = '';
  socket.on('data', (d) => (received += d.toString('latin1')));
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const head = `POST /1.0/event HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${svc.eventsToken}\r\nContent-Type: application/json\r\nContent-Length: ${contentLength}\r\n\r\n`;
  await new Promise<void>((resolve) => socket.write(Buffer.concat([Buffer.from(head), Buffer.alloc(send, 0x20)]), () => resolve()));
  return { socket, closed, answer: () => received.split('\r\n')[0] };
}

async function waitUntil(cond: () => boolean, what: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function expectGracefulExit(svc: ServiceProcess, exit: { code: number | null; signal: NodeJS.Signals | null }, signal: string) {
  expect(exit, 'exits 0 on its own (the 40 s deadline exits 1)').to.deep.equal({ code: 0, signal: null });
  const stopped = svc.logs().find((l) => l.msg === 'stopped');
  expect(stopped, 'the graceful path ran to its end').to.deep.include({ signal, connectionsCut: false });
}

describe('graceful shutdown of tallyhouse serve (real signals)', function () {
  this.timeout(300_000);
  let svc: ServiceProcess | undefined;
  afterEach(async () => {
    await svc?.cleanup();
    svc = undefined;
  });

  it('SIGTERM under keep-alive load: connections busy at the signal are answered and closed, never 503; every acknowledged event is stored once', async () => {
    svc = await startServiceProcess({ env: { RATE_LIMIT_EVENTS: '1000000', INGEST_BATCH_DELAY_MS: '50' } });
    const enginePid = svc.engineState().pid;
    const load = keepAliveLoad(svc, 16, 3);
    // Enough acknowledged requests to know the load runs; few enough for a slow machine.
    await waitUntil(() => load.outcomes.filter((o) => o.status === 200).length >= 50, '50 acknowledged requests', 100_000);
    svc.child.kill('SIGTERM');
    const exit = await svc.exited;
    await load.done;

    expectGracefulExit(svc, exit, 'SIGTERM');
    const statuses = new Set(load.outcomes.map((o) => o.status));
    expect([...statuses].sort(), 'answers are 200 or a refused/closed connection, no 503').to.deep.equal([200, 'connection-error'].sort());
    expect(load.outcomes.some((o) => o.status === 200 && o.closed), 'requests in flight at the signal were answered with Connection: close').to.equal(true);
    await waitUntil(() => !isAlive(enginePid), 'the engine to exit with the service');

    const stored = await storedCounts(svc.dataDir);
    const acknowledged = load.outcomes.filter((o) => o.status === 200);
    for (const o of acknowledged) expect(stored.get(o.name), o.name).to.equal(3);
    // A request cut without an answer may have been stored (its answer was lost), never twice.
    for (const [name, count] of stored) expect(count, name).to.equal(3);
  });

  it('after a 48 MB event body got its 413, SIGTERM under keep-alive load (30 posts in flight) with stalled uploads: the refused and the stalled connections are closed, every acknowledged event is stored, and no connection waits for the grace period', async () => {
    svc = await startServiceProcess({ env: { RATE_LIMIT_EVENTS: '1000000', INGEST_BATCH_DELAY_MS: '50' } });
    // Refused by its Content-Length before a byte of its body is read; the client stops sending
    // after 4 MB and keeps the connection open: the service closes it.
    const refused = await stalledUpload(svc, 48_000_000, 4 << 20);
    await refused.closed;
    expect(refused.answer()).to.equal('HTTP/1.1 413 Payload Too Large');
    const load = keepAliveLoad(svc, 30, 20);
    await waitUntil(() => load.outcomes.filter((o) => o.status === 200).length >= 50, '50 acknowledged requests', 100_000);
    // In flight at the signal and never finished (without the stall watch they held the shutdown
    // until the grace period): a body cut short, and a head cut short.
    const stalledBody = await stalledUpload(svc, 1 << 20, 64 * 1024);
    const stalledHead = connect(Number(new URL(svc.url).port), '127.0.0.1');
    stalledHead.on('error', () => {});
    const headClosed = new Promise<void>((resolve) => stalledHead.once('close', () => resolve()));
    await new Promise<void>((resolve) => stalledHead.write('POST /1.0/event HTTP/1.1\r\nHost: x\r\n', () => resolve()));
    svc.child.kill('SIGTERM');
    const exit = await svc.exited;
    await load.done;
    await Promise.all([stalledBody.closed, headClosed]);

    // Exit 0 through the graceful path, and not by the grace period's cut (connectionsCut: false).
    expectGracefulExit(svc, exit, 'SIGTERM');
    // The body cut short is cut by the drain's stall watch; the head cut short too, or as an idle
    // connection when the service had not parsed its bytes yet at the signal.
    expect(svc.logs().filter((l) => l.msg === 'request stalled during the drain: connection cut')).to.have.length.within(1, 2);
    expect(stalledBody.answer(), 'a request never received whole is not answered').to.equal('');
    const statuses = new Set(load.outcomes.map((o) => o.status));
    expect([...statuses].sort(), 'answers are 200 or a refused/closed connection, no 503').to.deep.equal([200, 'connection-error'].sort());
    const stored = await storedCounts(svc.dataDir);
    for (const o of load.outcomes.filter((o) => o.status === 200)) expect(stored.get(o.name), o.name).to.equal(20);
    for (const [name, count] of stored) expect(count, name).to.equal(20);
  });

  it('SIGTERM under survey-response writes: exit 0 without waiting for the queued rollup recomputes; every acknowledged write stored; the next start takes the marks left over', async () => {
    svc = await startServiceProcess({ env: { RATE_LIMIT_QUERIES: '1000000' } });
    const orgId = randomUUID();
    const token = await mintOrgToken(svc.dataDir, orgId);
    const load = surveyWriteLoad(svc.url, token, orgId, randomUUID(), 4, 200);
    await waitUntil(() => load.acked.length >= 10, '10 acknowledged batches', 100_000);
    const signalled = performance.now();
    svc.child.kill('SIGTERM');
    const exit = await svc.exited;
    const exitMs = performance.now() - signalled;
    await load.stop();
    expectGracefulExit(svc, exit, 'SIGTERM');
    expect(load.statuses.filter((s) => s !== 200 && s !== 'connection-error'), 'answers are 200 or a closed connection').to.deep.equal([]);

    const ids = load.acked.flat();
    const left = await withEngine(svc.dataDir, async (client) => {
      expect(await storedIds(client, orgId, ids), 'every acknowledged response stored').to.equal(ids.length);
      return pendingSlices(client, orgId);
    });
    // The figure the bar is about; timed bounds belong to the bench (bench/shutdown).
    console.log(`      exit ${Math.round(exitMs)} ms after SIGTERM (${load.acked.length} batches acknowledged, ${left} hour slices left marked, load ${loadavg()[0].toFixed(1)})`);
    // The recomputes not done at exit stay marked: the next start takes them over.
    const again = await startServiceProcess({ dataDir: svc.dataDir });
    try {
      await withEngine(svc.dataDir, async (client) => {
        await waitFor(async () => (await pendingSlices(client, orgId)) === 0, 'the marks to be taken over');
        expect(await rollupDiffersFromRaw(client, orgId), 'hour slices where the rollup differs from the raw table').to.equal(0);
      });
      if (left > 0) expect(again.logs().some((l) => /took over the pending rollup marks/.test(l.msg)), `${left} slices left marked`).to.equal(true);
    } finally {
      await again.cleanup();
    }
  });

  it('another client of the engine (a CLI, a bench) holding an idle keep-alive connection: the engine closes it by its own short timeout, so it does not hold the stop', async () => {
    svc = await startServiceProcess();
    const enginePid = svc.engineState().pid;
    const endpoint = (await findRunningEngine(svc.dataDir))!;
    // A Node agent keeps an idle socket until the server closes it.
    const agent = new Agent({ keepAlive: true });
    const keepAlive = await new Promise<string>((resolve, reject) =>
      get(`${endpoint.url}/?query=SELECT%201`, { agent, headers: endpoint.headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(String(res.headers['keep-alive'])));
      }).on('error', reject),
    );
    // The engine's stop waits for idle connections until this timeout (its default, 30 s: the stop
    // then waited 5 s).
    expect(keepAlive).to.match(new RegExp(`^timeout=${ENGINE_KEEP_ALIVE_TIMEOUT_S}\\b`));
    svc.child.kill('SIGTERM');
    const exit = await svc.exited;
    agent.destroy();
    expectGracefulExit(svc, exit, 'SIGTERM');
    await waitUntil(() => !isAlive(enginePid), 'the engine to exit with the service');
  });

  it('SIGINT to the whole process group (a terminal Ctrl-C) lets queued events commit before the engine stops', async () => {
    // A long batch delay: the events are still queued when the signal arrives.
    svc = await startServiceProcess({ detached: true, env: { RATE_LIMIT_EVENTS: '1000000', INGEST_BATCH_DELAY_MS: '1500' } });
    const enginePid = svc.engineState().pid;
    const agent = new Agent({ keepAlive: true });
    const requests = Array.from({ length: 10 }, (_, i) => postEvents(svc!, agent, `shutdown-int-${i}`, 5));
    await new Promise((r) => setTimeout(r, 300)); // the requests reach the queue, which waits 1.5 s
    process.kill(-svc.child.pid!, 'SIGINT');
    const outcomes = await Promise.all(requests);
    const exit = await svc.exited;
    agent.destroy();

    expectGracefulExit(svc, exit, 'SIGINT');
    expect(outcomes.map((o) => o.status)).to.deep.equal(Array(10).fill(200));
    await waitUntil(() => !isAlive(enginePid), 'the engine to exit with the service');
    const stored = await storedCounts(svc.dataDir);
    for (const o of outcomes) expect(stored.get(o.name), o.name).to.equal(5);
  });
});
