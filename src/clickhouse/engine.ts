import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { freePort } from '../ports.ts';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../log.ts';

/**
 * The embedded engine: a real ClickHouse HTTP server (clickhouse-local from the chdb library) in a
 * child process, on loopback, behind a secret header generated per data directory.
 *
 * Layout of DATA_DIR (mode 0700, so other local users cannot read the key):
 *   engine.key   the secret header value (0600)
 *   engine.xml   the engine config: http_handlers that 404 any request without the header (0600)
 *   engine.json  {port, pid} of the engine serving this directory, for other commands to find
 *   engine.log   the engine's stderr
 *   clickhouse/  the engine's data
 *   engine.d/    optional: every *.xml in it is merged into engine.xml by the engine itself
 *                (ClickHouse's `<config>.d` rule), for a probe's or a bench's extra config with no
 *                code change, in any checkout (bench/ingest writes PROFILE_LOGS_CONFIG_XML there)
 */
export const ENGINE_KEY_HEADER = 'X-Tallyhouse-Engine-Key';

/**
 * Seconds the engine keeps an idle keep-alive connection open (its default is 30). The engine's
 * stop waits for idle connections to time out: another client's idle pooled socket (a CLI, a
 * bench, a second service on the same DATA_DIR) would hold the service's exit as long. The
 * engine's clients drop their idle sockets sooner (EMBEDDED_IDLE_SOCKET_TTL_MS), so they never
 * send a request on a socket the engine is closing.
 * More than 1: Node's HTTP agent keeps a socket for reuse only while the server's announced
 * timeout (`Keep-Alive: timeout=N`) exceeds its 1 s safety buffer; at 1 it closes every socket after
 * its response, and each query pays a new connection to the engine.
 */
export const ENGINE_KEEP_ALIVE_TIMEOUT_S = 2;

export interface EngineEndpoint {
  url: string;
  headers: Record<string, string>;
}

const CHILD_SCRIPT = fileURLToPath(new URL('./engine-child.js', import.meta.url));
const READY_TIMEOUT_MS = 60_000;

/**
 * `system.query_views_log` (each materialized view's run of an INSERT: rows, CPU) and
 * `system.part_log` (each new part and merge: rows, duration, ProfileEvents), for a bench to say
 * what each view, table and merge of an INSERT costs. Not in the default config: like query_log,
 * clickhouse-local keeps them in memory (its `system` database is not persistent), so a
 * long-running service would grow them without bound; a probe puts this in DATA_DIR/engine.d/.
 */
export const PROFILE_LOGS_CONFIG_XML = `<clickhouse>
  <query_views_log><database>system</database><table>query_views_log</table><flush_interval_milliseconds>1000</flush_interval_milliseconds></query_views_log>
  <part_log><database>system</database><table>part_log</table><flush_interval_milliseconds>1000</flush_interval_milliseconds></part_log>
</clickhouse>
`;

/** What an engine of an embedded cluster adds to a plain one (embedded-cluster.ts). */
export interface EngineOptions {
  /** Native TCP port, for the other shards' Distributed queries (loopback only). */
  tcpPort?: number;
  /** More config elements (remote_servers, ...), inside <clickhouse>. */
  extraConfigXml?: string;
  /** More command-line settings (e.g. --distributed_foreground_insert=1). */
  extraArgs?: readonly string[];
}

export function prepareDataDir(dataDir: string, extraConfigXml = ''): { key: string; configPath: string } {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700);
  const keyPath = join(dataDir, 'engine.key');
  if (!existsSync(keyPath)) writeFileSync(keyPath, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
  const key = readFileSync(keyPath, 'utf8').trim();
  const configPath = join(dataDir, 'engine.xml');
  writeFileSync(configPath, engineConfigXml(key).replace('</clickhouse>', `${extraConfigXml}</clickhouse>`), { mode: 0o600 });
  return { key, configPath };
}

function engineConfigXml(key: string): string {
  // The key is hex from randomBytes, safe inside XML. Rules are tried in order; a request without
  // the header matches none and gets 404.
  // query_log: kept in memory by clickhouse-local (its `system` database is not persistent) and,
  // as measured, only created on an engine started on a new directory: after a restart on an
  // existing one, SYSTEM FLUSH LOGS leaves no system.query_log. Benches read it where they can.
  // Merge threads run at nice 10: the engine shares the cores with the service, and background
  // merges competing at equal priority with INSERTs make acknowledgement latency spike
  // (bench/ingest/README.md, "Figures behind the schema and the code"). Merges still take every
  // idle cycle. A no-op without CAP_SYS_NICE (the engine's own rule, even for a lower priority).
  const header = `<headers><${ENGINE_KEY_HEADER}>${key}</${ENGINE_KEY_HEADER}></headers>`;
  return `<clickhouse>
  <http_handlers>
    <rule><url>/ping</url>${header}<handler><type>static</type><response_content>Ok.</response_content></handler></rule>
    <rule>${header}<handler><type>dynamic_query_handler</type><query_param_name>query</query_param_name></handler></rule>
  </http_handlers>
  <query_log><database>system</database><table>query_log</table><flush_interval_milliseconds>1000</flush_interval_milliseconds></query_log>
  <os_threads_nice_value_merge_mutate>10</os_threads_nice_value_merge_mutate>
  <keep_alive_timeout>${ENGINE_KEEP_ALIVE_TIMEOUT_S}</keep_alive_timeout>
</clickhouse>
`;
}

/** The outcome of a health probe. `local-error`: this process could not even open a socket. */
export type ProbeResult = 'up' | 'down' | 'local-error';

/**
 * Errors of this process, not of the engine: out of descriptors (EMFILE, ENFILE), buffers
 * (ENOBUFS) or memory. Restarting a healthy engine cannot cure them, and the restart would itself
 * fail for the same reason.
 */
const LOCAL_RESOURCE_ERRORS = new Set(['EMFILE', 'ENFILE', 'ENOBUFS', 'ENOMEM', 'EADDRNOTAVAIL']);

export function isLocalResourceError(err: unknown): boolean {
  return LOCAL_RESOURCE_ERRORS.has((err as { code?: string })?.code ?? '');
}

/**
 * GET /ping on a fresh connection (no keep-alive): a pooled idle socket would make the engine wait
 * for it at shutdown.
 */
export function probe(endpoint: EngineEndpoint, timeoutMs = 1000): Promise<ProbeResult> {
  return new Promise((resolve) => {
    let req;
    try {
      req = httpGet(`${endpoint.url}/ping`, { headers: endpoint.headers, agent: false, timeout: timeoutMs }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode === 200 ? 'up' : 'down'));
        // A socket cut after the headers: no 'end'. (A settled promise ignores later calls.)
        res.on('close', () => resolve('down'));
      });
    } catch (err) {
      resolve(isLocalResourceError(err) ? 'local-error' : 'down');
      return;
    }
    req.on('timeout', () => req.destroy());
    req.on('error', (err) => resolve(isLocalResourceError(err) ? 'local-error' : 'down'));
  });
}

export async function ping(endpoint: EngineEndpoint, timeoutMs = 1000): Promise<boolean> {
  return (await probe(endpoint, timeoutMs)) === 'up';
}

function endpointFor(port: number, key: string): EngineEndpoint {
  return { url: `http://127.0.0.1:${port}`, headers: { [ENGINE_KEY_HEADER]: key } };
}

interface EngineState {
  port: number;
  pid: number;
}

function readState(dataDir: string): EngineState | undefined {
  try {
    const s = JSON.parse(readFileSync(join(dataDir, 'engine.json'), 'utf8')) as EngineState;
    return Number.isInteger(s.port) ? s : undefined;
  } catch {
    return undefined;
  }
}

/** An engine already serving this data directory (started by another command), if any. */
export async function findRunningEngine(dataDir: string): Promise<EngineEndpoint | undefined> {
  const state = readState(dataDir);
  if (!state) return undefined;
  const keyPath = join(dataDir, 'engine.key');
  if (!existsSync(keyPath)) return undefined;
  const endpoint = endpointFor(state.port, readFileSync(keyPath, 'utf8').trim());
  return (await ping(endpoint)) ? endpoint : undefined;
}

/** A running engine child owned by this process. */
export class EngineProcess {
  private exited = false;
  readonly exitPromise: Promise<number | null>;

  private constructor(readonly child: ChildProcess, readonly endpoint: EngineEndpoint, log: Logger) {
    this.exitPromise = new Promise((resolve) => {
      child.once('exit', (code) => {
        this.exited = true;
        resolve(code);
      });
      // Without a listener, an 'error' event (the spawn failed, e.g. EMFILE; or a kill failed)
      // would end the whole service. A failed spawn has no pid and will never emit 'exit'.
      child.on('error', (err) => {
        log.error({ msg: 'embedded engine process error', error: String(err), pid: child.pid ?? null });
        if (child.pid === undefined) {
          this.exited = true;
          resolve(null);
        }
      });
    });
  }

  get alive(): boolean {
    return !this.exited;
  }

  /**
   * Starts an engine on `dataDir`. Rejects if the child exits before it answers (for instance
   * because another process holds the directory), so the caller can look for that one instead.
   */
  static async start(dataDir: string, log: Logger, preferredPort?: number, options: EngineOptions = {}): Promise<EngineProcess> {
    const { key, configPath } = prepareDataDir(dataDir, options.extraConfigXml);
    const port = await freePort(preferredPort);
    const logFd = openSync(join(dataDir, 'engine.log'), 'a', 0o600);
    let child: ChildProcess;
    const args = [
      `--config-file=${configPath}`,
      `--path=${join(dataDir, 'clickhouse')}`,
      `--http_port=${port}`,
      '--listen_host=127.0.0.1',
      '--multiquery',
      ...(options.tcpPort ? [`--tcp_port=${options.tcpPort}`] : []),
      ...(options.extraArgs ?? []),
      `--query=SYSTEM START LISTEN HTTP;${options.tcpPort ? ' SYSTEM START LISTEN TCP;' : ''} SELECT count() FROM table FORMAT Null`,
      '--structure=line String',
      '--input-format=LineAsString',
    ];
    try {
      // Its own process group (detached): a Ctrl-C in a terminal signals our group only, so the
      // service drains its queue into an engine that is still there, then stops it. The engine
      // still never outlives the service: it exits when its stdin pipe closes, and the pipe
      // closes when this process ends, however it ends.
      child = spawn(process.execPath, [CHILD_SCRIPT, ...args], { stdio: ['pipe', logFd, logFd], detached: true });
    } finally {
      closeSync(logFd);
    }
    // The pipe must stay open for the engine's life; errors on it (EPIPE after the child died)
    // are reported through 'exit', not here.
    child.stdin?.on('error', () => {});
    const engine = new EngineProcess(child, endpointFor(port, key), log);
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (!engine.alive) throw new Error(`embedded engine exited before it was ready (see ${join(dataDir, 'engine.log')})`);
      if (await ping(engine.endpoint, 500)) {
        writeFileSync(join(dataDir, 'engine.json'), JSON.stringify({ port, pid: child.pid }), { mode: 0o600 });
        log.info({ msg: 'embedded engine ready', port, pid: child.pid, dataDir });
        return engine;
      }
      await sleep(50);
    }
    await engine.stop();
    throw new Error(`embedded engine did not answer within ${READY_TIMEOUT_MS} ms (see ${join(dataDir, 'engine.log')})`);
  }

  /** Closes stdin: the engine finishes in-flight queries and exits. Forces it after `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
    if (!this.alive) return;
    this.child.stdin?.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exitPromise;
    clearTimeout(timer);
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
