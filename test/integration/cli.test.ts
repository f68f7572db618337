import { expect } from 'chai';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { request } from './harness.ts';
import { stopProcess, track } from './processes.ts';
import { buildClient } from '../../src/clickhouse/connection.ts';
import { findRunningEngine } from '../../src/clickhouse/engine.ts';
import { loadConfig } from '../../src/config.ts';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../../bin/tallyhouse.js', import.meta.url));

/**
 * The real `tallyhouse serve` process on an empty data directory, as `npm start` runs it, and the
 * CLI used beside it on the same directory.
 */
describe('tallyhouse serve + CLI on one data directory', function () {
  this.timeout(180_000);
  let dataDir: string;
  let server: ChildProcess;
  let banner = '';
  let baseUrl = '';
  const env = () => ({ ...process.env, DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn' });
  const cli = (...args: string[]) => run(process.execPath, [BIN, ...args], { env: env(), timeout: 60_000 });

  const startServer = async () => {
    banner = '';
    server = track(spawn(process.execPath, [BIN, 'serve'], { env: env(), stdio: ['ignore', 'pipe', 'inherit'] }));
    server.stdout!.on('data', (d) => (banner += d));
    const deadline = Date.now() + 120_000;
    while (!/Stop with Ctrl-C/.test(banner)) {
      if (Date.now() > deadline || server.exitCode !== null || server.signalCode !== null) throw new Error(`server did not start: ${banner}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    baseUrl = /running at (http:\/\/\S+)/.exec(banner)![1];
  };
  const stopServer = () => stopProcess(server);

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'tallyhouse-cli-'));
    await startServer();
  });
  // Also after a start that failed: the server is stopped, its engine with it.
  after(async () => {
    await stopServer();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps the data directory closed to other local users', () => {
    expect(statSync(dataDir).mode & 0o077).to.equal(0);
    expect(statSync(join(dataDir, 'engine.key')).mode & 0o077).to.equal(0);
  });

  it('prints a token per scope and curl examples that work as printed', async () => {
    for (const scope of ['events', 'releases', 'responses:read', 'responses:write']) {
      expect(banner).to.match(new RegExp(`${scope}\\s+th_[A-Za-z0-9_-]{43}`));
    }
    const commands = banner.split('\n\n').filter((block) => block.startsWith('curl '));
    expect(commands.length).to.be.at.least(6);
    for (const command of commands) {
      const { stdout } = await run('bash', ['-c', `${command} -w '\\n%{http_code}'`]);
      const lines = stdout.trim().split('\n');
      const status = Number(lines.pop());
      expect(status, `${command}\n${stdout}`).to.be.oneOf([200, 201]);
      const body = JSON.parse(lines.join('\n'));
      if (command.includes('/response')) {
        // The demo data makes the query examples return something.
        const nonEmpty = body.hits?.total?.value > 0 || (body.nps_groups?.total ?? 0) > 0 || (body.aggregations?.buckets?.length ?? 0) > 0;
        expect(nonEmpty, command).to.equal(true);
      }
    }
  });

  it('runs every curl example of README.md as pasted, once the banner\'s export lines are pasted', async () => {
    const readme = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');
    const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]).filter((block) => /^curl /m.test(block));
    expect(blocks.length).to.be.at.least(8);
    const exports = banner.split('\n').filter((line) => /^\s+export [A-Z_]+=\S+$/.test(line));
    expect(exports.map((l) => l.trim().split('=')[0])).to.include.members(['export EVENTS_TOKEN', 'export RELEASES_TOKEN', 'export READ_TOKEN', 'export WRITE_TOKEN']);
    // Each curl call prints only its status; the README's own address is this server's.
    const statusOnly = `curl() { command curl --silent --show-error --output /dev/null --write-out '%{http_code}\\n' "$@"; }`;
    for (const block of blocks) {
      const { stdout } = await run('bash', ['-c', [...exports, statusOnly, block.replaceAll('localhost:8080', new URL(baseUrl).host)].join('\n')]);
      const statuses = stdout.trim().split('\n').map(Number);
      expect(statuses, block).to.have.length(block.match(/^curl /gm)!.length);
      for (const status of statuses) expect(status, block).to.be.within(200, 299);
    }
  });

  it('answers the README\'s feedback-cohort funnel on the demo data with users in both cohorts', async () => {
    const readme = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');
    const example = /curl -s -X SEARCH localhost:8080\/1\.0\/event\/funnel [^\n]*\\\n\s+-d '([^']*)'/.exec(readme);
    expect(example, 'the README has a funnel example').to.not.equal(null);
    const token = /events:read\s+(th_\S+)/.exec(banner)![1];
    const res = await request(baseUrl, 'SEARCH', '/1.0/event/funnel', { token, body: JSON.parse(example![1]) });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.steps[0].users).to.be.above(0);
    for (const cohort of res.body.cohorts) expect(cohort.steps[0].users, cohort.name).to.be.above(0);
  });

  it('token create/list/revoke work while the server runs, on its engine', async () => {
    const org = '11111111-2222-4333-8444-555555555555';
    const { stdout } = await cli('token', 'create', '--org', org, '--scope', 'events,releases', '--name', 'ci pipeline', '--json');
    const minted = JSON.parse(stdout);
    expect(minted).to.include({ org_id: org });
    expect(minted.scopes).to.deep.equal(['events', 'releases']);
    expect(minted.token).to.match(/^th_/);
    const ok = await request(baseUrl, 'POST', '/1.0/event', { token: minted.token, body: [{ type: 'track', event_name: 'cli' }] });
    expect(ok.status).to.equal(200);

    const list = await cli('token', 'list', '--org', org);
    expect(list.stdout).to.include(minted.id);
    expect(list.stdout.split('\n')[0]).to.match(/^id\s+name\s+org_id\s+scopes\s+created_at\s+revoked_at$/);
    expect(list.stdout.split('\n').find((l) => l.includes(minted.id))).to.include('ci pipeline');
    expect(list.stdout).to.not.include(minted.token);

    await cli('token', 'revoke', minted.id);
    const deadline = Date.now() + 7000;
    let status = 200;
    while (status === 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      status = (await request(baseUrl, 'POST', '/1.0/event', { token: minted.token, body: [{ type: 'track', event_name: 'cli' }] })).status;
    }
    expect(status).to.equal(401);
  });

  it('rejects bad CLI input with a clear message and exit code 2', async () => {
    const bad = await cli('token', 'create', '--org', 'nope', '--scope', 'events').catch((e) => e);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.match(/--org must be a UUID/);
    const badScope = await cli('token', 'create', '--org', '11111111-2222-4333-8444-555555555555', '--scope', 'admin').catch((e) => e);
    expect(badScope.stderr).to.match(/--scope must be a comma list of events, events:read, releases, responses:read, responses:write/);
    const badEnv = await run(process.execPath, [BIN, 'migrate'], { env: { ...env(), PORT: 'x' } }).catch((e) => e);
    expect(badEnv.code).to.equal(2);
    expect(badEnv.stderr).to.match(/PORT="x"/);
  });

  it('reuses the demo organization and tokens on the next start, and loses nothing acknowledged', async () => {
    const firstTokens = banner.match(/th_[A-Za-z0-9_-]{43}/g);
    const token = /events\s+(th_\S+)/.exec(banner)![1];
    const res = await request(baseUrl, 'POST', '/1.0/event', { token, body: [{ type: 'track', event_name: 'before-restart' }] });
    expect(res.status).to.equal(200);
    await stopServer();
    await startServer();
    expect(banner.match(/th_[A-Za-z0-9_-]{43}/g)).to.deep.equal(firstTokens);
    const { stdout } = await cli('token', 'list', '--json');
    expect(JSON.parse(stdout).length).to.be.at.least(4);
    const endpoint = (await findRunningEngine(dataDir))!;
    const client = buildClient(endpoint, loadConfig({ DATA_DIR: dataDir }), 'tallyhouse');
    const rows = await (await client.query({ query: "SELECT count() AS c FROM events WHERE event_name = 'before-restart'", format: 'JSONEachRow' })).json<{ c: string }>();
    await client.close();
    expect(Number(rows[0].c)).to.equal(1);
  });
});
