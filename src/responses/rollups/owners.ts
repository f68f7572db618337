/**
 * The owners of pending marks (schema/130): each service process that marks slices registers
 * itself in survey_rollup_owners, refreshes its row (a heartbeat) while it runs, and records that
 * it stopped once its drain is over. This module says which owners are dead (their marks may be
 * taken over: takeover.ts) and which live process takes them over, so that no process ever takes
 * back the marks of a process that may still add or take back its own
 * (docs/architecture.md, "Pending marks and their owners").
 *
 * Dead, for sure:
 *   - `stopped`: the process wrote it after its last mark change (the drain waits for the writes
 *     in flight and the recompute running, and stops the heartbeat, before writing it);
 *   - or on this machine (same host name, boot and pid namespace) its pid is gone, or now runs a
 *     process started at another time (the pid was reused).
 * A process on another machine that stops refreshing its row is never presumed dead: a pause or a
 * network partition looks the same, and taking over the marks of a process that comes back would
 * let it take them back a second time. Its marks wait for a restart on its machine or for
 * `tallyhouse rollups rebuild`.
 *
 * Who takes over: the successor, the oldest (by `started`, then id) of the live processes that
 * refreshed their row within STALE_MS, so that two live processes never take over the same owner
 * at once (the second would take its marks back twice).
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { randomUUID } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

/** How often a running process refreshes its row. */
export const HEARTBEAT_MS = 5_000;
/** A row older than this does not make its process a successor candidate. */
export const STALE_MS = 30_000;

export type OwnerState = 'running' | 'stopped' | 'taken_over';

export interface OwnerRow {
  owner: string;
  machine: string;
  pid: number;
  pidStart: string;
  /** When the process started, 'YYYY-MM-DD hh:mm:ss.mmm' (orders as text). */
  started: string;
  /** Milliseconds since the row was last refreshed, by the engine's clock. */
  ageMs: number;
  state: OwnerState;
}

/** This process as an owner of marks. */
export interface Self {
  owner: string;
  machine: string;
  pid: number;
  pidStart: string;
}

const readText = (path: string): string => {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '';
  }
};

/** The start time of a process in clock ticks since boot (/proc/<pid>/stat field 22), or '' where unknown. */
export function processStart(pid: number): string {
  const stat = readText(`/proc/${pid}/stat`);
  // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[19] ?? '';
}

/** Host name, boot id and pid namespace: '' where unknown (then no pid is compared). */
function machineId(): string {
  const boot = readText('/proc/sys/kernel/random/boot_id');
  let pidNamespace = '';
  try {
    pidNamespace = readlinkSync('/proc/self/ns/pid');
  } catch {
    /* not Linux: no pid is compared */
  }
  return boot && pidNamespace ? `${hostname()}/${boot}/${pidNamespace}` : '';
}

export function newSelf(): Self {
  return { owner: randomUUID(), machine: machineId(), pid: process.pid, pidStart: processStart(process.pid) };
}

/** Whether a process of this machine still runs: its pid exists and started when it was recorded. */
export function processAlive(pid: number, pidStart: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const now = processStart(pid);
  return pidStart === '' || now === '' || now === pidStart;
}

/**
 * Pure: the dead owners whose marks may be taken over, and the live owner that takes them over.
 * `self` is a candidate whatever its row says (it may not be visible yet).
 */
export function judgeOwners(rows: readonly OwnerRow[], self: Self, alive: (pid: number, pidStart: string) => boolean): { dead: OwnerRow[]; successor: string } {
  const sameMachine = (r: OwnerRow) => self.machine !== '' && r.machine === self.machine;
  const isDead = (r: OwnerRow) => r.owner !== self.owner && (r.state === 'stopped' || (sameMachine(r) && !alive(r.pid, r.pidStart)));
  const dead = rows.filter((r) => r.state !== 'taken_over' && isDead(r));
  const candidates = rows.filter((r) => r.owner === self.owner || (r.state === 'running' && !isDead(r) && r.ageMs <= STALE_MS));
  if (!candidates.some((r) => r.owner === self.owner)) {
    candidates.push({ owner: self.owner, machine: self.machine, pid: self.pid, pidStart: self.pidStart, started: '9999', ageMs: 0, state: 'running' });
  }
  candidates.sort((a, b) => (a.started < b.started ? -1 : a.started > b.started ? 1 : a.owner < b.owner ? -1 : a.owner > b.owner ? 1 : 0));
  return { dead, successor: candidates[0].owner };
}

/** Writes the owner's row: registration, heartbeat, stop, taken over (`seen` by the engine's clock). */
export async function writeOwner(client: ClickHouseClient, self: Self, state: OwnerState, started: string, signal?: AbortSignal): Promise<void> {
  await client.command({
    query:
      'INSERT INTO survey_rollup_owners (owner, machine, pid, pid_start, started, seen, state) ' +
      "SELECT {owner:UUID}, {machine:String}, {pid:UInt32}, {pid_start:String}, {started:DateTime64(3, 'UTC')}, now64(3, 'UTC'), {state:String}",
    query_params: { owner: self.owner, machine: self.machine, pid: self.pid, pid_start: self.pidStart, started, state },
    abort_signal: signal,
  });
}

/** Every owner's latest row (state only moves forward: the highest one counts). */
export async function readOwners(client: ClickHouseClient): Promise<OwnerRow[]> {
  const rs = await client.query({
    query:
      "SELECT toString(owner) AS owner, argMax(machine, seen) AS machine, argMax(pid, seen) AS pid, argMax(pid_start, seen) AS pid_start, " +
      "toString(min(started)) AS started, toInt64(dateDiff('millisecond', max(seen), now64(3, 'UTC'))) AS age_ms, toString(max(state)) AS state " +
      'FROM survey_rollup_owners GROUP BY owner',
    format: 'JSONEachRow',
  });
  return (await rs.json<{ owner: string; machine: string; pid: number; pid_start: string; started: string; age_ms: string; state: OwnerState }>()).map((r) => ({
    owner: r.owner, machine: r.machine, pid: Number(r.pid), pidStart: r.pid_start, started: r.started, ageMs: Number(r.age_ms), state: r.state,
  }));
}
