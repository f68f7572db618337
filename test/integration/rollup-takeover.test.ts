import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import { createLogger } from '../../src/log.ts';
import { newSelf, readOwners, writeOwner } from '../../src/responses/rollups/owners.ts';
import { takeOverDeadOwners } from '../../src/responses/rollups/takeover.ts';
import { request, startTestService, type TestService } from './harness.ts';
import { startInstance } from './instance.ts';
import { isAlive, startServiceProcess, type ServiceProcess } from './service-process.ts';
import { mintOrgToken, pendingSlices, rollupDiffersFromRaw, storedIds, surveyWriteLoad, waitFor, withEngine } from './survey-load.ts';

/**
 * Pending marks left by a process that died (src/responses/rollups/owners.ts, takeover.ts): the
 * next process to start, or a live one, recomputes those slices and takes the marks back, so
 * that the rollups serve them again; the marks of a live process are never touched. Real kills.
 */

async function rows<T>(client: ClickHouseClient, query: string, params: Record<string, unknown>): Promise<T[]> {
  return (await client.query({ query, query_params: params, format: 'JSONEachRow' })).json<T>();
}

/** The completion counts of the survey in survey_responses FINAL, as the summary answers them. */
async function rawCompletion(client: ClickHouseClient, orgId: string, survey: string) {
  const counts = { not_started: 0, partially_completed: 0, fully_completed: 0 } as Record<string, number>;
  for (const r of await rows<{ c: string; n: string }>(client, 'SELECT toString(completion) AS c, count() AS n FROM survey_responses FINAL WHERE org_id = {org:UUID} AND survey_id = {survey:UUID} GROUP BY c', { org: orgId, survey })) {
    counts[r.c] = Number(r.n);
  }
  return counts;
}

describe('rollup marks of a killed service process are taken over (real kills)', function () {
  this.timeout(300_000);
  let svc: ServiceProcess | undefined;
  let again: ServiceProcess | undefined;
  afterEach(async () => {
    await again?.cleanup();
    await svc?.cleanup();
    svc = again = undefined;
  });

  it('SIGKILL under survey-response writes, then a restart: the slices it left marked are recomputed and served by the rollups again, equal to the raw table', async () => {
    svc = await startServiceProcess({ env: { RATE_LIMIT_QUERIES: '1000000' } });
    const { pid: enginePid } = svc.engineState();
    const orgId = randomUUID();
    const survey = randomUUID();
    const token = await mintOrgToken(svc.dataDir, orgId);
    const load = surveyWriteLoad(svc.url, token, orgId, survey, 4, 200);
    await waitFor(async () => load.acked.length >= 5, '5 acknowledged batches', 100_000);
    // Frozen, then killed, at a moment when some slices are marked and not recomputed (as they are
    // most of the time under this load; the engine runs on while the service is frozen).
    let marked = 0;
    for (let attempt = 0; attempt < 30 && marked === 0; attempt++) {
      svc.child.kill('SIGSTOP');
      marked = await withEngine(svc.dataDir, (client) => pendingSlices(client, orgId));
      if (marked === 0) {
        svc.child.kill('SIGCONT');
        await new Promise((r) => setTimeout(r, 150));
      }
    }
    expect(marked, 'slices marked when the service was killed').to.be.greaterThan(0);
    svc.child.kill('SIGKILL');
    await svc.exited;
    await load.stop();
    await waitFor(async () => !isAlive(enginePid), 'the engine to exit with its service');

    const ids = load.acked.flat();
    const left = await withEngine(svc.dataDir, async (client) => {
      expect(await storedIds(client, orgId, ids), 'every acknowledged response stored').to.equal(ids.length);
      const owners = await rows<{ o: string }>(client, 'SELECT DISTINCT toString(owner) AS o FROM survey_rollup_pending WHERE org_id = {org:UUID}', { org: orgId });
      expect(owners.map((r) => r.o), 'the marks name the killed process').to.not.include('00000000-0000-0000-0000-000000000000');
      return pendingSlices(client, orgId);
    });
    expect(left, 'the killed process left marks').to.be.greaterThan(0);

    again = await startServiceProcess({ dataDir: svc.dataDir });
    const restarted = again;
    await withEngine(svc.dataDir, async (client) => {
      await waitFor(async () => (await pendingSlices(client, orgId)) === 0, 'the marks to be taken over');
      expect(await rollupDiffersFromRaw(client, orgId), 'hour slices where the rollup differs from the raw table').to.equal(0);
      // Served by the rollups (nothing is pending) and equal to the raw table.
      const summary = await request(restarted.url, 'SEARCH', `/1.0/survey/${survey}/response/summary`, { token, body: {} });
      expect(summary.status).to.equal(200);
      expect(summary.body.completion).to.deep.equal(await rawCompletion(client, orgId, survey));
      const negative = await rows<{ n: string }>(client, 'SELECT count() AS n FROM (SELECT owner, survey_id, hour FROM survey_rollup_pending WHERE org_id = {org:UUID} GROUP BY owner, survey_id, hour HAVING sum(pending) < 0)', { org: orgId });
      expect(Number(negative[0].n), 'no owner took back more than it had').to.equal(0);
    });
    const took = again.logs().filter((l) => /took over the pending rollup marks/.test(l.msg));
    expect(took, 'the restart took over the killed process').to.have.length(1);
    expect(took[0].slices).to.equal(left);
  });
});

describe('rollup marks with two instances on one database: a live instance\'s marks are never taken over', function () {
  this.timeout(180_000);
  let svc: TestService;
  let other: Awaited<ReturnType<typeof startInstance>>;
  const log = createLogger('silent');

  before(async () => {
    svc = await startTestService();
    other = await startInstance(svc.database);
  });
  after(async () => {
    await other?.stop();
    await svc?.close();
  });

  it('marks of the other live instance stay through a takeover check; killed, its marks are recomputed and taken back once', async () => {
    const client = svc.client;
    const orgId = svc.orgId;
    const survey = randomUUID();
    const token = await svc.token(['responses:read', 'responses:write']);
    await waitFor(async () => (await readOwners(client)).some((o) => o.pid === other.proc.pid), 'the other instance to register');
    const otherOwner = (await readOwners(client)).find((o) => o.pid === other.proc.pid)!.owner;
    // Responses through the other instance, recomputed (its marks back to 0).
    const at = '2024-05-02T10:00:00.000001Z';
    const body = Array.from({ length: 20 }, (_, i) => ({
      id: randomUUID(), survey_id: survey, channel_id: survey, respondent_id: randomUUID(), language: 'en', completion: i % 2 ? 'fully_completed' : 'partially_completed',
      active: false, end_reason: 'completed', ended_at: '', created_at: at, updated_at: at, last_answer_at: '', hidden_fields: [], answers: [],
    }));
    expect((await request(other.url, 'POST', '/1.0/survey/response', { token, body })).status).to.equal(200);
    await waitFor(async () => (await pendingSlices(client, orgId)) === 0, 'the other instance to recompute');
    // A write of the other instance in flight: its mark on the slice, not yet taken back.
    await client.insert({ table: 'survey_rollup_pending', values: [{ org_id: orgId, survey_id: survey, hour: '2024-05-02 10:00:00.000000', owner: otherOwner, pending: 1 }], format: 'JSONEachRow' });

    // A checker registered as the oldest process: the successor, which takes over dead owners.
    const checker = newSelf();
    const register = () => writeOwner(client, checker, 'running', '2000-01-01 00:00:00.000');
    await register();
    expect(await takeOverDeadOwners(client, checker, log, 'test-takeover-'), 'nothing dead while the other instance runs').to.not.include(otherOwner);
    expect(await pendingSlices(client, orgId), 'the live instance\'s mark stays').to.equal(1);

    other.proc.kill('SIGKILL');
    await new Promise((r) => other.proc.once('exit', r));
    await register();
    expect(await takeOverDeadOwners(client, checker, log, 'test-takeover-')).to.include(otherOwner);
    expect(await pendingSlices(client, orgId)).to.equal(0);
    expect(await rollupDiffersFromRaw(client, orgId)).to.equal(0);
    expect((await readOwners(client)).find((o) => o.owner === otherOwner)!.state).to.equal('taken_over');
    // Taken over once: a second check finds nothing, and the marks do not go below 0.
    expect(await takeOverDeadOwners(client, checker, log, 'test-takeover-')).to.not.include(otherOwner);
    const [{ p }] = await rows<{ p: string }>(client, 'SELECT toString(sum(pending)) AS p FROM survey_rollup_pending WHERE owner = {owner:UUID}', { owner: otherOwner });
    expect(Number(p)).to.equal(0);
    const summary = await svc.request('SEARCH', `/1.0/survey/${survey}/response/summary`, { token, body: {} });
    expect(summary.body.completion).to.deep.equal(await rawCompletion(client, orgId, survey));
  });
});
