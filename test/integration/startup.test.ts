import { expect } from 'chai';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { stopProcess, track } from './processes.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin/tallyhouse.js');

const listenOn = (port = 0): Promise<Server> =>
  new Promise((resolve) => {
    const s = createServer();
    s.listen(port, '127.0.0.1', () => resolve(s));
  });
const portOf = (s: Server) => (s.address() as { port: number }).port;

/** `tallyhouse serve` with these settings: its exit code and what it wrote to stderr. */
async function serveFails(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const r = await run(process.execPath, [BIN, 'serve'], { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, timeout: 90_000 }).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code: number; stderr: string }) => e,
  );
  return { code: r.code, stderr: r.stderr };
}

/**
 * Every start-up failure is one line on stderr naming the cause and the setting, and a non-zero
 * exit, found before the engine starts (the data directory, the port and host, the engine
 * library) or within CLICKHOUSE_CONNECT_TIMEOUT_MS.
 */
describe('start-up failures: one clear line, non-zero exit', function () {
  this.timeout(180_000);
  const dirs: string[] = [];
  let busy: Server;
  let closedPort: number;
  before(async () => {
    busy = await listenOn();
    const probe = await listenOn();
    closedPort = portOf(probe);
    await new Promise((r) => probe.close(r));
  });
  after(() => {
    busy.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const tmpData = () => {
    const d = mkdtempSync(join(tmpdir(), 'tallyhouse-startup-'));
    dirs.push(d);
    return d;
  };

  it('names the setting for each cause', async () => {
    const cases: Array<[string, Record<string, string>, RegExp]> = [
      ['data dir not writable', { DATA_DIR: '/proc/nope/data', PORT: '0' }, /^tallyhouse: DATA_DIR=\/proc\/nope\/data is not a writable directory \(/],
      ['port in use', { DATA_DIR: tmpData(), PORT: String(portOf(busy)) }, new RegExp(`^tallyhouse: PORT=${portOf(busy)} is already in use on HOST=127.0.0.1`)],
      ['bad host (no such name)', { DATA_DIR: tmpData(), PORT: '0', HOST: 'no-such-host.invalid' }, /^tallyhouse: HOST=no-such-host.invalid is not an address of this machine/],
      ['bad host (not ours)', { DATA_DIR: tmpData(), PORT: '0', HOST: '192.0.2.1' }, /^tallyhouse: HOST=192.0.2.1 is not an address of this machine/],
      ['ClickHouse unreachable', { PORT: '0', CLICKHOUSE_URL: `http://127.0.0.1:${closedPort}`, CLICKHOUSE_CONNECT_TIMEOUT_MS: '500' }, new RegExp(`^tallyhouse: CLICKHOUSE_URL=http://127.0.0.1:${closedPort} is unreachable: .*within 500 ms \\(.*ECONNREFUSED.*CLICKHOUSE_CONNECT_TIMEOUT_MS=500`)],
      // A cluster (CLICKHOUSE_CLUSTER) waits for CLICKHOUSE_URL as long as a single server does.
      ['ClickHouse cluster unreachable', { PORT: '0', CLICKHOUSE_URL: `http://127.0.0.1:${closedPort}`, CLICKHOUSE_CLUSTER: 'tallyhouse', CLICKHOUSE_CONNECT_TIMEOUT_MS: '500' }, new RegExp(`^tallyhouse: CLICKHOUSE_URL=http://127.0.0.1:${closedPort} is unreachable: .*within 500 ms \\(.*ECONNREFUSED.*CLICKHOUSE_CONNECT_TIMEOUT_MS=500`)],
      ['engine library missing', { DATA_DIR: tmpData(), PORT: '0', CHDB_LIBCHDB_PATH: '/nonexistent/libchdb.so' }, /^tallyhouse: the embedded ClickHouse engine library was not found .*CHDB_LIBCHDB_PATH/],
    ];
    const results = await Promise.all(cases.map(([, env]) => serveFails(env)));
    results.forEach((r, i) => {
      const [what, , message] = cases[i];
      expect(r.code, what).to.equal(1);
      expect(r.stderr.trimEnd().split('\n'), `${what}: one line`).to.have.length(1);
      expect(r.stderr, what).to.match(message);
    });
    // Nothing started: no engine left a file behind in the data directories.
    for (const d of dirs) expect(readdirSync(d).filter((f) => f === 'engine.json'), d).to.deep.equal([]);
  });

  it('a DATA_DIR and a TALLYHOUSE_EMBEDDED_SHARDS that do not match: one line naming both, exit 1, no engine started beside the data (serve and the CLI)', async () => {
    // What an embedded cluster of 2 shards leaves in DATA_DIR (cluster.ts), and what a single engine leaves.
    const cluster = tmpData();
    writeFileSync(join(cluster, 'cluster.json'), JSON.stringify({ shards: 2, tcp_ports: [1, 2] }));
    mkdirSync(join(cluster, 'shard-1'));
    mkdirSync(join(cluster, 'shard-2'));
    const single = tmpData();
    mkdirSync(join(single, 'clickhouse'));
    const cases: Array<[string, string[], Record<string, string>, RegExp]> = [
      ['serve on a cluster without the variable', ['serve'], { DATA_DIR: cluster, PORT: '0' }, /^tallyhouse: DATA_DIR=\S+ holds an embedded cluster of 2 shards \(cluster\.json\) but TALLYHOUSE_EMBEDDED_SHARDS=1; set TALLYHOUSE_EMBEDDED_SHARDS=2 /],
      ['token list on a cluster without the variable', ['token', 'list'], { DATA_DIR: cluster }, /^tallyhouse: DATA_DIR=\S+ holds an embedded cluster of 2 shards .*set TALLYHOUSE_EMBEDDED_SHARDS=2 /],
      ['migrate on a cluster with another count', ['migrate'], { DATA_DIR: cluster, TALLYHOUSE_EMBEDDED_SHARDS: '3' }, /^tallyhouse: DATA_DIR=\S+ holds an embedded cluster of 2 shards .*TALLYHOUSE_EMBEDDED_SHARDS=3; set TALLYHOUSE_EMBEDDED_SHARDS=2 /],
      ['serve on a single engine\'s data with the variable', ['serve'], { DATA_DIR: single, PORT: '0', TALLYHOUSE_EMBEDDED_SHARDS: '2' }, /^tallyhouse: DATA_DIR=\S+ holds the data of a single embedded engine but TALLYHOUSE_EMBEDDED_SHARDS=2; unset TALLYHOUSE_EMBEDDED_SHARDS /],
    ];
    const results = await Promise.all(
      cases.map(([, args, env]) =>
        run(process.execPath, [BIN, ...args], { env: { ...process.env, LOG_LEVEL: 'warn', TALLYHOUSE_EMBEDDED_SHARDS: '', ...env }, timeout: 90_000 }).then(
          () => ({ code: 0, stderr: '' }),
          (e: { code: number; stderr: string }) => e,
        ),
      ),
    );
    results.forEach((r, i) => {
      const [what, , , message] = cases[i];
      expect(r.code, what).to.equal(1);
      expect(r.stderr.trimEnd().split('\n'), `${what}: one line`).to.have.length(1);
      expect(r.stderr, what).to.match(message);
    });
    // Nothing started beside the data: no engine of the other kind, no migrations applied to one.
    expect(readdirSync(cluster).sort()).to.deep.equal(['cluster.json', 'shard-1', 'shard-2']);
    expect(readdirSync(join(cluster, 'shard-1'))).to.deep.equal([]);
    expect(readdirSync(single).sort()).to.deep.equal(['clickhouse']);
  });
});

/** Processes whose parent chain leads to `root` (from /proc). */
function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* gone meanwhile */
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [pid, ppid] of parent) if (ppid === p) (out.push(pid), walk(pid));
  };
  walk(root);
  return out;
}

/** The process runs in this checkout or names the data directory on its command line. */
const ranHere = (pid: number, dataDir: string) => {
  try {
    return readlinkSync(`/proc/${pid}/cwd`) === join(ROOT).replace(/\/$/, '') || readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dataDir);
  } catch {
    return false;
  }
};

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('npm start: TALLYHOUSE_DEMO=0, and SIGTERM to npm stops everything', function () {
  this.timeout(240_000);
  let dataDir: string | undefined;
  let npm: ChildProcess | undefined;
  /** The processes under npm, as the test saw them. */
  let tree: number[] = [];
  // Also when the test failed half-way: npm and whatever runs under it are stopped.
  after(async () => {
    const under = [...tree, ...(npm?.pid !== undefined ? descendants(npm.pid) : [])];
    await stopProcess(npm);
    // Only processes of this run (npm's children run in the checkout, the engine on the data
    // directory): a pid of the tree may have been reused since.
    for (const pid of under.filter((pid) => alive(pid) && ranHere(pid, dataDir!))) process.kill(pid, 'SIGKILL');
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts without demo data, answers, and leaves no service or engine process after SIGTERM to npm', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'tallyhouse-npm-start-'));
    npm = track(spawn('npm', ['start', '--silent'], { cwd: ROOT, env: { ...process.env, DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn', TALLYHOUSE_DEMO: '0' }, stdio: ['ignore', 'pipe', 'pipe'] }));
    let banner = '';
    npm.stdout!.on('data', (d) => (banner += d));
    npm.stderr!.resume();
    const exited = new Promise<number | null>((r) => npm!.once('exit', (code) => r(code)));
    const ready = Date.now() + 120_000;
    while (!/Stop with Ctrl-C/.test(banner)) {
      if (npm.exitCode !== null || Date.now() > ready) throw new Error(`npm start exited or did not start: ${banner}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const baseUrl = /running at (http:\/\/\S+)/.exec(banner)![1];
    expect((await fetch(`${baseUrl}/healthz`)).status).to.equal(200);
    expect(banner, 'no demo tokens').to.not.match(/th_[A-Za-z0-9_-]{43}/);
    expect(banner).to.include('tallyhouse token create');
    expect(existsSync(join(dataDir, 'demo.json')), 'demo.json').to.equal(false);

    tree = descendants(npm.pid!);
    expect(tree.length, 'the service and its engine run under npm').to.be.at.least(2);
    npm.kill('SIGTERM');
    expect(await exited).to.equal(0);
    // The service drains and stops its engine; nothing of the tree outlives it.
    const deadline = Date.now() + 60_000;
    while (tree.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(tree.filter(alive), 'processes left running').to.deep.equal([]);
  });
});
