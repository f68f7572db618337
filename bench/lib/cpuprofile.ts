import { readFileSync } from 'node:fs';

/**
 * Summary of a V8 .cpuprofile (node --cpu-prof): where the service spent its CPU, by self time
 * (grouped by package / source file) and by inclusive time of functions.
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileSummary {
  total_ms: number;
  idle_ms: number;
  /** Self time by area: npm package, src/ file, node: internals, GC, program. */
  by_area: Array<{ area: string; ms: number; pct_busy: number }>;
  /** Functions by self time. */
  top_self: Array<{ fn: string; ms: number; pct_busy: number }>;
  /** Functions by inclusive time (self + callees). */
  top_inclusive: Array<{ fn: string; ms: number; pct_busy: number }>;
}

function area(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  const src = url.indexOf('/src/');
  if (src >= 0) return url.slice(src + 1).replace(/\?.*$/, '');
  if (url.startsWith('node:')) return url.split('/')[0] === 'node:internal' ? url.replace(/^node:internal\/([^/]+).*$/, 'node:internal/$1') : url;
  return url;
}

function label(n: ProfileNode): string {
  const { functionName, url, lineNumber } = n.callFrame;
  const short = url.replace(/^.*\/node_modules\//, '').replace(/^.*\/(src\/)/, '$1').replace(/^file:\/\//, '');
  return `${functionName || '(anonymous)'} ${short ? `${short}:${lineNumber + 1}` : ''}`.trim();
}

/** CLOCK_MONOTONIC in µs: the clock of V8 profile timestamps (and of process.hrtime) on Linux. */
export const monotonicMicros = (): number => Number(process.hrtime.bigint() / 1000n);

/**
 * `windows`: [from, to] in monotonicMicros() of the bench process; only samples taken inside
 * them count (the service's start-up, migrations and demo seeding are left out).
 */
export function summarizeProfile(path: string, top = 20, windows?: Array<[number, number]>): ProfileSummary {
  const p = JSON.parse(readFileSync(path, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  const self = new Map<number, number>();
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    if (windows && !windows.some(([a, b]) => t >= a && t <= b)) continue;
    self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000);
  }

  let total = 0;
  let idle = 0;
  const areas = new Map<string, number>();
  const selfFn = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, ms] of self) {
    const n = byId.get(id)!;
    total += ms;
    if (n.callFrame.functionName === '(idle)') {
      idle += ms;
      continue;
    }
    const a = area(n.callFrame.url, n.callFrame.functionName);
    areas.set(a, (areas.get(a) ?? 0) + ms);
    selfFn.set(label(n), (selfFn.get(label(n)) ?? 0) + ms);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const l = label(byId.get(cur)!);
      if (l === '(root)' || seen.has(l)) continue;
      seen.add(l);
      inclusive.set(l, (inclusive.get(l) ?? 0) + ms);
    }
  }
  const busy = Math.max(1e-9, total - idle);
  const rank = (m: Map<string, number>, key: 'area' | 'fn') =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, ms]) => ({ [key]: k, ms: Math.round(ms), pct_busy: Math.round((ms / busy) * 1000) / 10 }));
  return {
    total_ms: Math.round(total),
    idle_ms: Math.round(idle),
    by_area: rank(areas, 'area') as ProfileSummary['by_area'],
    top_self: rank(selfFn, 'fn') as ProfileSummary['top_self'],
    top_inclusive: rank(inclusive, 'fn') as ProfileSummary['top_inclusive'],
  };
}
