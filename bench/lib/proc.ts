import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

/**
 * CPU time of a process from /proc/<pid>/stat (user + system, all its threads, not its children):
 * the service and its engine child are measured separately. Linux only; undefined elsewhere or
 * once the process is gone.
 */
let ticksPerSecond: number | undefined;
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

export function cpuSeconds(pid: number | readonly number[] | undefined): number | undefined {
  if (Array.isArray(pid)) {
    // Several processes (the engines of an embedded cluster): their sum.
    const each = pid.map((p) => cpuSeconds(p));
    return each.some((x) => x === undefined) ? undefined : each.reduce<number>((a, b) => a + b!, 0);
  }
  if (typeof pid !== 'number' || !pid) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (Number(fields[11]) + Number(fields[12])) / clockTicks();
  } catch {
    return undefined;
  }
}

/** This process's own CPU seconds (the load generator). */
export function selfCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/**
 * Busy CPU seconds of the whole machine (every process), from the first line of /proc/stat:
 * what other processes took during a phase is this minus ours, a measure of how noisy it was.
 */
export function machineBusySeconds(): number | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
    // cpu  user nice system idle iowait irq softirq steal guest guest_nice
    const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
    return (user + nice + system + irq + softirq + steal) / clockTicks();
  } catch {
    return undefined;
  }
}

export interface CpuSnapshot {
  service?: number;
  engine?: number;
  bench: number;
  /** Everything else on the machine (other users of the CPUs): noise. */
  other?: number;
  /** Wall-clock seconds (in a delta). */
  wall?: number;
}

export interface CpuPids {
  service?: number;
  /** The engine, or every engine of an embedded cluster (summed). */
  engine?: number | number[];
}

export function cpuSnapshot(pids: CpuPids): CpuSnapshot {
  // `other` holds the machine total here; cpuDelta turns it into "everything but ours".
  return { service: cpuSeconds(pids.service), engine: cpuSeconds(pids.engine), bench: selfCpuSeconds(), other: machineBusySeconds(), wall: performance.now() / 1000 };
}

const diff = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : b - a);

export function cpuDelta(before: CpuSnapshot, after: CpuSnapshot): CpuSnapshot {
  const service = diff(before.service, after.service);
  const engine = diff(before.engine, after.engine);
  const bench = after.bench - before.bench;
  const machine = diff(before.other, after.other);
  const other = machine === undefined ? undefined : Math.max(0, machine - (service ?? 0) - (engine ?? 0) - bench);
  return { service, engine, bench, other, wall: diff(before.wall, after.wall) };
}

/** CPU seconds of each thread of a process (`/proc/<pid>/task/<tid>/stat`), with its name and the system part. */
export type ThreadCpu = Map<string, { name: string; cpu: number; system: number }>;

export function threadCpu(pid: number | readonly number[] | undefined): ThreadCpu {
  const out: ThreadCpu = new Map();
  for (const p of typeof pid === 'number' ? [pid] : (pid ?? [])) {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${p}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      try {
        const stat = readFileSync(`/proc/${p}/task/${tid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const utime = Number(fields[11]) / clockTicks();
        const stime = Number(fields[12]) / clockTicks();
        out.set(`${p}/${tid}`, { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), cpu: utime + stime, system: stime });
      } catch {
        // The thread ended between the listing and the read.
      }
    }
  }
  return out;
}

/**
 * CPU seconds spent between two snapshots, by thread name (trailing digits dropped: a pool's
 * threads are one row), largest first. A thread that ended in between is lost (its CPU is still in
 * the process's total); one that started counts from zero.
 */
export function threadCpuDelta(before: ThreadCpu, after: ThreadCpu): { name: string; cpu_s: number; system_s: number }[] {
  const byName = new Map<string, { cpu_s: number; system_s: number }>();
  for (const [tid, t] of after) {
    const b = before.get(tid);
    const name = t.name.replace(/\d+$/, '');
    const row = byName.get(name) ?? byName.set(name, { cpu_s: 0, system_s: 0 }).get(name)!;
    row.cpu_s += t.cpu - (b?.cpu ?? 0);
    row.system_s += t.system - (b?.system ?? 0);
  }
  return [...byName].map(([name, r]) => ({ name, ...r })).filter((r) => r.cpu_s > 0).sort((a, b) => b.cpu_s - a.cpu_s);
}
