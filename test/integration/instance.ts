import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { TEST_DATA_DIR } from './harness.ts';
import { stopProcess, track } from './processes.ts';

const INSTANCE = fileURLToPath(new URL('./fixtures/app-process.ts', import.meta.url));

/** A service instance in its own process on the suite's database (fixtures/app-process.ts), with `env` added to its environment. */
export async function startInstance(database: string, env: Record<string, string> = {}): Promise<{ url: string; proc: ChildProcess; stop: () => Promise<void> }> {
  const proc = track(spawn(process.execPath, ['--import', 'tsx', INSTANCE], {
    env: { ...process.env, DATA_DIR: TEST_DATA_DIR, CLICKHOUSE_DATABASE: database, RATE_LIMIT_QUERIES: '100000', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  }));
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  const deadline = Date.now() + 60_000;
  while (!/listening (\d+)/.test(out)) {
    if (Date.now() > deadline || proc.exitCode !== null || proc.signalCode !== null) {
      await stopProcess(proc);
      throw new Error(`instance did not start: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const stop = () => stopProcess(proc);
  return { url: `http://127.0.0.1:${/listening (\d+)/.exec(out)![1]}`, proc, stop };
}
