import type { ChildProcess } from 'node:child_process';

/**
 * Child processes the suites start (services, Redis, npm), stopped whatever happens to the suite.
 *
 * A suite tracks each process as it spawns it, before waiting for it to be ready, and stops it in
 * its after() hook, which mocha runs also when before() failed half-way. What a suite could not
 * stop (mocha gave up on a hook that hung) is killed when the test process exits: no service, and
 * so no engine (it exits with its service), outlives the run.
 */
const running = new Set<ChildProcess>();

process.once('exit', () => {
  for (const proc of running) proc.kill('SIGKILL');
});

const exited = (proc: ChildProcess) => proc.exitCode !== null || proc.signalCode !== null;

/** Registers a spawned process; returns it. */
export function track<T extends ChildProcess>(proc: T): T {
  running.add(proc);
  proc.once('exit', () => running.delete(proc));
  // A spawn failure is reported on this event; unheard, it would be an uncaught exception.
  proc.once('error', () => running.delete(proc));
  return proc;
}

/**
 * SIGTERM, then SIGKILL if it has not exited within `graceMs`; resolves once it has exited. A
 * service stops its engine on SIGTERM before it exits.
 */
export async function stopProcess(proc: ChildProcess | undefined, graceMs = 30_000): Promise<void> {
  if (!proc || exited(proc) || proc.pid === undefined) return;
  const gone = new Promise((resolve) => proc.once('exit', resolve));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
  await gone;
  clearTimeout(timer);
}
