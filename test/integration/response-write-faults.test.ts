import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { connectDatabase, type Database } from '../../src/clickhouse/connection.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { request, startTestService, type TestService } from './harness.ts';
import { startInstance } from './instance.ts';
import { startServiceProcess, type ServiceProcess } from './service-process.ts';

const BIN = fileURLToPath(new URL('../../bin/tallyhouse.js', import.meta.url));

const record = (orgId: string, id: string, survey: string, createdAt: string, updatedAt: string) => ({
  id, doc_type: 'response', org_id: orgId, channel_id: survey, respondent_id: id, respondent_aliases: [],
  survey_id: survey, scenario_id: survey, language: 'en', locale: 'en-US',
  question_id_path: 'q', question_correlation_id_path: 'qc', action_id_path: 'a', action_correlation_id_path: 'ac',
  group_ids: [], hidden_fields: [], emotions: { fear: null, sadness: null, anger: null, joy: null }, answers: [],
  completion: 'fully_completed', active: false, end_reason: 'completed', ended_at: '', created_at: createdAt, updated_at: updatedAt, last_answer_at: '',
});

/**
 * A deletion in another process while a write of an older version is on its way: the writer's
 * check before its INSERT knows only the tombstones it has seen, so the version is stored, and
 * the check after the INSERT (tombstones.ts, store.ts) takes it back before the write is answered.
 */
describe('response writes: a deletion in another process between the check and the INSERT', function () {
  this.timeout(180_000);
  let svc: TestService;
  let other: Awaited<ReturnType<typeof startInstance>>;
  let token: string;

  before(async () => {
    svc = await startTestService();
    token = await svc.token(['responses:read', 'responses:write']);
    other = await startInstance(svc.database);
  });
  after(async () => {
    await other?.stop();
    await svc?.close();
  });

  const rows = async (query: string, params: Record<string, unknown>) =>
    (await (await svc.client.query({ query, query_params: { org: svc.orgId, ...params }, format: 'JSONEachRow' })).json()) as Array<Record<string, unknown>>;

  it('the old version is taken back: acknowledged, not counted, gone from every read, rollups exact', async () => {
    const survey = randomUUID();
    const [gone, kept, fresh] = [randomUUID(), randomUUID(), randomUUID()];
    const v1 = (id: string) => record(svc.orgId, id, survey, '2024-05-01T10:00:00.000001Z', '2024-05-01T10:05:00.000001Z');
    // The other process writes (so it has read the org's tombstones: none) ...
    const first = await request(other.url, 'POST', '/1.0/survey/response', { token, body: [v1(gone), v1(kept)] });
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    // ... this process deletes one of them: the tombstone the other process has not seen ...
    expect((await svc.request('DELETE', `/1.0/survey/response/${gone}`, { token })).body).to.deep.equal({ deleted: 1 });
    // ... and the other process receives the old version again (a retry) with a new response. Its
    // check before the INSERT passes (it knows no tombstone); the INSERT stores the version; the
    // check after it finds the deletion and deletes the version again before answering.
    const retry = await request(other.url, 'POST', '/1.0/survey/response', { token, body: [v1(gone), v1(fresh)] });
    expect(retry.status, JSON.stringify(retry.body)).to.equal(200);
    expect(retry.body.count, 'the refused version is not counted').to.equal(1);
    // It was stored, then deleted by the writer itself: two masked copies (the first write's and
    // the retry's) until the purge, none visible.
    const masked = await rows('SELECT count() AS n FROM survey_responses WHERE org_id = {org:UUID} AND id = {id:UUID} SETTINGS apply_deleted_mask = 0', { id: gone });
    expect(Number(masked[0].n), 'the retry reached the table (the check after the INSERT took it back)').to.equal(2);

    expect(await rows('SELECT toString(id) AS id FROM survey_responses FINAL WHERE org_id = {org:UUID} ORDER BY id', {}))
      .to.deep.equal([kept, fresh].sort().map((id) => ({ id })));
    const search = await svc.request('SEARCH', `/1.0/survey/${survey}/response`, { token, body: { size: 10 } });
    expect(search.body.hits.total.value).to.equal(2);
    expect(search.body.hits.responses.map((r: { id: string }) => r.id).sort()).to.deep.equal([kept, fresh].sort());
    // The summary, served from the rollups once their recompute is done, counts the same two.
    await svc.settle();
    for (let i = 0; i < 100; i++) {
      const [{ p }] = await rows('SELECT toInt64(sum(pending)) AS p FROM survey_rollup_pending WHERE org_id = {org:UUID}', {});
      if (Number(p) === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const summary = await svc.request('SEARCH', `/1.0/survey/${survey}/response/summary`, { token, body: {} });
    expect(summary.body.completion).to.deep.equal({ not_started: 0, partially_completed: 0, fully_completed: 2 });

    // The other process has now seen the tombstone: a third copy is dropped before its INSERT.
    const third = await request(other.url, 'POST', '/1.0/survey/response', { token, body: [v1(gone)] });
    expect(third.body.count).to.equal(0);
    const visible = await rows('SELECT count() AS n FROM survey_responses WHERE org_id = {org:UUID} AND id = {id:UUID}', { id: gone });
    expect(Number(visible[0].n)).to.equal(0);
  });
});

/**
 * The same race with the writer killed (SIGKILL) after its INSERT committed and before the check
 * that follows it: its version of the deleted response is stored and visible, and its client
 * retries. The retry goes to a process that knows the tombstone, so it drops the record before
 * its own INSERT; it must still take back what the killed attempt stored (take-back.ts).
 */
describe('response writes: the writer killed between its INSERT and the check after it, during a deletion', function () {
  this.timeout(180_000);
  let svc: TestService;
  let writer: Awaited<ReturnType<typeof startInstance>>;
  let token: string;
  const survey = randomUUID();
  const [gone, kept, fresh] = [randomUUID(), randomUUID(), randomUUID()];

  before(async () => {
    svc = await startTestService();
    token = await svc.token(['responses:read', 'responses:write']);
    // The writer's process holds (test-only, write-hold.ts) after an INSERT that stored `gone`.
    writer = await startInstance(svc.database, { TALLYHOUSE_TEST_HOLD_AFTER_RESPONSE_INSERT: gone });
  });
  after(async () => {
    await writer?.stop();
    await svc?.close();
  });

  const count = async (query: string, id: string) =>
    Number((await (await svc.client.query({ query, query_params: { org: svc.orgId, id }, format: 'JSONEachRow' })).json<{ n: string }>())[0].n);
  const visible = (id: string) => count('SELECT count() AS n FROM survey_responses FINAL WHERE org_id = {org:UUID} AND id = {id:UUID}', id);

  it('the retry takes the killed attempt\'s version back: not visible, not counted, rollups exact', async () => {
    const v1 = (id: string) => record(svc.orgId, id, survey, '2024-05-02T10:00:00.000001Z', '2024-05-02T10:05:00.000001Z');
    // The writer writes once (so it has read the org's tombstones: none).
    expect((await request(writer.url, 'POST', '/1.0/survey/response', { token, body: [v1(kept)] })).status).to.equal(200);
    // This process stores `gone` and deletes it: a tombstone the writer has not seen.
    expect((await svc.request('POST', '/1.0/survey/response', { token, body: [v1(gone)] })).status).to.equal(200);
    expect((await svc.request('DELETE', `/1.0/survey/response/${gone}`, { token })).body).to.deep.equal({ deleted: 1 });
    expect(await visible(gone)).to.equal(0);
    // The writer gets the old version again: its check before the INSERT passes, the INSERT
    // commits after the deletion's DELETE, and the process is killed before its check after it.
    const body = [v1(gone), v1(fresh)];
    const first = request(writer.url, 'POST', '/1.0/survey/response', { token, body }).then((r) => r, (err: Error) => err);
    for (let i = 0; (await visible(gone)) === 0; i++) {
      if (i > 600) throw new Error('the writer never stored the version');
      await new Promise((r) => setTimeout(r, 50));
    }
    writer.proc.kill('SIGKILL');
    const exit = await new Promise((r) => (writer.proc.exitCode !== null || writer.proc.signalCode !== null ? r(writer.proc.signalCode) : writer.proc.once('exit', (_c, signal) => r(signal))));
    expect(exit).to.equal('SIGKILL');
    expect(await first, 'the killed write was not answered').to.be.instanceOf(Error);
    expect(await visible(gone), 'the killed attempt left the deleted response visible').to.equal(1);

    // The client retries on this process, which knows the tombstone (it deleted the response).
    const retry = await svc.request('POST', '/1.0/survey/response', { token, body });
    expect(retry.status, JSON.stringify(retry.body)).to.equal(200);
    expect(retry.body.count, 'the refused version is not counted').to.equal(1);
    expect(await visible(gone), 'a deleted response never comes back').to.equal(0);
    const search = await svc.request('SEARCH', `/1.0/survey/${survey}/response`, { token, body: { size: 10 } });
    expect(search.body.hits.responses.map((r: { id: string }) => r.id).sort()).to.deep.equal([kept, fresh].sort());
    const summary = await svc.request('SEARCH', `/1.0/survey/${survey}/response/summary`, { token, body: {} });
    expect(summary.body.completion).to.deep.equal({ not_started: 0, partially_completed: 0, fully_completed: 2 });
    // Once every recompute this process queued has run, the rollup of that hour counts the two.
    await svc.settle();
    const served = await count("SELECT toInt64(sum(t_rows)) AS n FROM survey_rollup FINAL WHERE org_id = {org:UUID} AND span = 'hour' AND survey_id = {id:UUID}", survey);
    expect(served).to.equal(2);
  });
});

/**
 * Shutdown with the engine failing under the rollup recompute (maintainer.ts): the service does not
 * retry forever; it logs that the recompute was abandoned and exits. The marks stay, so every read
 * takes those hours from the raw table until `tallyhouse rollups rebuild` recomputes them.
 */
describe('rollup maintainer: recompute abandoned at shutdown (real signals)', function () {
  this.timeout(300_000);
  let proc: ServiceProcess;
  let db: Database | undefined;

  after(async () => {
    await db?.close();
    await proc?.cleanup();
  });

  it('SIGSTOP then SIGKILL of the engine under the recompute, SIGTERM to the service: logged, exit 0, marks kept; rebuild repairs', async () => {
    proc = await startServiceProcess();
    const orgId = randomUUID();
    const minted = await promisify(execFile)(process.execPath, [BIN, 'token', 'create', '--org', orgId, '--scope', 'responses:write,responses:read', '--json'], { env: { ...process.env, DATA_DIR: proc.dataDir } });
    const own = JSON.parse(minted.stdout).token as string;
    const survey = randomUUID();
    // 1000 responses over 1000 distinct hours: a recompute far too long to end before the signals.
    const hour = 3_600_000;
    const base = Date.UTC(2023, 0, 1);
    const body = Array.from({ length: 1000 }, (_, i) => {
      const at = new Date(base + i * hour + 1234).toISOString().replace('Z', '001Z');
      return record(orgId, randomUUID(), survey, at, at);
    });
    const res = await request(proc.url, 'POST', '/1.0/survey/response', { token: own, body });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const { pid: enginePid } = proc.engineState();
    process.kill(enginePid, 'SIGSTOP');
    proc.child.kill('SIGTERM');
    // The drain runs the round (or waits for the one running) against the stopped engine; the
    // engine then dies under it.
    await new Promise((r) => setTimeout(r, 1500));
    process.kill(enginePid, 'SIGKILL');
    const exit = await proc.exited;
    expect(exit, JSON.stringify(proc.logs().slice(-5))).to.deep.equal({ code: 0, signal: null });
    const abandoned = proc.logs().filter((l) => /recompute abandoned at shutdown/.test(l.msg));
    expect(abandoned, 'the abandon is logged with the command that repairs it').to.have.length(1);
    expect(abandoned[0].msg).to.contain('tallyhouse rollups rebuild');

    // The marks were kept: the hours are read from the raw table (never a stale rollup).
    const config = loadConfig({ DATA_DIR: proc.dataDir, PORT: '0', LOG_LEVEL: 'silent' });
    db = await connectDatabase(config, createLogger('silent'), { supervise: false });
    const one = async (query: string) =>
      Number(Object.values((await (await db!.client().query({ query, query_params: { org: orgId }, format: 'JSONEachRow' })).json<Record<string, string>>())[0])[0]);
    expect(await one('SELECT count() FROM survey_responses FINAL WHERE org_id = {org:UUID}')).to.equal(1000);
    expect(await one('SELECT toInt64(sum(pending)) FROM survey_rollup_pending WHERE org_id = {org:UUID}'), 'marks kept').to.be.greaterThan(0);

    // The repair the log names: marks cleared, the rollup counts every response.
    await promisify(execFile)(process.execPath, [BIN, 'rollups', 'rebuild', '--org', orgId], { env: { ...process.env, DATA_DIR: proc.dataDir } });
    expect(await one('SELECT toInt64(sum(pending)) FROM survey_rollup_pending WHERE org_id = {org:UUID}')).to.equal(0);
    expect(await one("SELECT sum(t_rows) FROM survey_rollup FINAL WHERE org_id = {org:UUID} AND span = 'hour'")).to.equal(1000);
  });
});
