import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

/**
 * Programs some suites need beside Node (a Redis server, a browser). On a machine without one,
 * the suite skips with one line naming the program and the command that installs it, so that
 * `npm ci && npm test` passes on a fresh clone. `.ci/run` installs them all and sets
 * TALLYHOUSE_TEST_REQUIRE_PROGRAMS=1, under which a missing program fails the suite instead:
 * CI never skips silently.
 */
export const REQUIRE_PROGRAMS = process.env.TALLYHOUSE_TEST_REQUIRE_PROGRAMS === '1';

export interface Program {
  /** A command looked up on PATH, or an absolute path. */
  command: string;
  /** The command that installs it on Debian. */
  install: string;
}

export const REDIS_SERVER: Program = { command: 'redis-server', install: 'apt-get install -y redis-server' };
export const CHROMIUM: Program = { command: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', install: 'apt-get install -y chromium' };

/** The program's path, or undefined when the machine does not have it. */
export function findProgram(command: string): string | undefined {
  const executable = (path: string) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (isAbsolute(command)) return executable(command) ? command : undefined;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir !== '' && executable(join(dir, command))) return join(dir, command);
  }
  return undefined;
}

/**
 * Call first in a suite's `before` hook: returns the program's path when it is there; otherwise
 * skips the suite (every test of it, and its `after` hooks have nothing to stop) with one line on
 * stdout, or throws under TALLYHOUSE_TEST_REQUIRE_PROGRAMS=1.
 */
export function requireProgram(suite: Mocha.Context, program: Program): string {
  const path = findProgram(program.command);
  if (path !== undefined) return path;
  const line = `${program.command} not found; install it with: ${program.install}`;
  if (REQUIRE_PROGRAMS) throw new Error(`${line} (TALLYHOUSE_TEST_REQUIRE_PROGRAMS=1: a missing program fails the suite)`);
  console.log(`      skipped: ${line}`);
  suite.skip();
}
