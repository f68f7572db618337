import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { track } from './processes.ts';

const BIN = fileURLToPath(new URL('../../bin/tallyhouse.js', import.meta.url));

/**
 * The real `tallyhouse serve` in its own process, on its own data directory, for tests about the
 * process itself: signals, descriptor limits, exit codes. Its stderr log lines are kept.
 */
export interface ServiceProcess {
  child: ChildProcess;
  dataDir: string;
  url: string;
  /** The demo organization's token with the `events` scope. */
  eventsToken: string;
  /** The demo organization's tokens, by scope, as the banner prints them. */
  tokens: Record<string, string>;
  /** The structured log lines so far. */
  logs(): Array<Record<string, any>>;
  /** {port, pid} of the engine serving the data directory (engine.json). */
  engineState(): { port: number; pid: number };
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILLs the service and its engine if still running, removes the data directory. */
  cleanup(): Promise<void>;
}

export interface StartOptions {
  env?: Record<string, string>;
  /** A command the service runs under, e.g. ['prlimit', '--nofile=2048:2048', '--']. */
  wrapper?: string[];
  /** Own process group (the test can then signal the group as a terminal does). */
  detached?: boolean;
  /** Start on this data directory (a restart); cleanup() then leaves it to its creator. */
  dataDir?: string;
}

export async function startServiceProcess(opts: StartOptions = {}): Promise<ServiceProcess> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'tallyhouse-proc-'));
  const env = { ...process.env, DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info', ...opts.env };
  const [command, ...args] = [...(opts.wrapper ?? []), process.execPath, BIN, 'serve'];
  const child = track(spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: opts.detached ?? false }));
  let banner = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (banner += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const engineState = () => JSON.parse(readFileSync(join(dataDir, 'engine.json'), 'utf8')) as { port: number; pid: number };
  const cleanup = async () => {
    let enginePid: number | undefined;
    try {
      enginePid = engineState().pid;
    } catch {
      /* no engine started */
    }
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    // The engine exits when its stdin closes; make sure of it before removing its directory.
    if (enginePid !== undefined) {
      for (let i = 0; i < 100 && isAlive(enginePid); i++) await new Promise((r) => setTimeout(r, 100));
      if (isAlive(enginePid)) process.kill(enginePid, 'SIGKILL');
    }
    if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 120_000;
  while (!/Stop with Ctrl-C/.test(banner)) {
    if (Date.now() > deadline || child.exitCode !== null || child.signalCode !== null) {
      await cleanup();
      throw new Error(`service did not start:\n${banner}\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const url = /running at (http:\/\/\S+)/.exec(banner)?.[1];
  const eventsToken = /events\s+(th_\S+)/.exec(banner)?.[1];
  if (url === undefined || eventsToken === undefined) {
    await cleanup();
    throw new Error(`the banner has no URL or no events token (demo data off?):\n${banner}`);
  }
  return {
    child,
    dataDir,
    url,
    eventsToken,
    tokens: Object.fromEntries([...banner.matchAll(/^\s+(\S+)\s+(th_\S+)/gm)].map((m) => [m[1], m[2]])),
    logs: () =>
      stderr
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l)),
    engineState,
    exited,
    cleanup,
  };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
