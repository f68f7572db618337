/**
 * Funnels, retention and feedback cohorts computed in plain TypeScript over the events and
 * responses a test wrote, straight from their definitions (README, src/events/analysis): by
 * enumerating chains and windows, not with the service's one-pass array algorithm. No code is
 * shared with the service.
 */

export interface RefEvent {
  /** The user: the alias, or the event id for an anonymous event (a user of its own). */
  user: string;
  alias: string | null;
  /** Milliseconds: timestamp, reception. */
  t: number;
  r: number;
  seq: number;
  id: string;
  type: string;
  name: string;
  url: string;
  props: Record<string, unknown>;
  rating: string;
}

export type Pred = (e: RefEvent) => boolean;
export type Order = 'ordered' | 'strict' | 'any';

/** Per user: did they reach step j (T[j] set), when first, and the previous step's time then. */
interface Reach {
  T: (number | null)[];
  P: (number | null)[];
}

/**
 * The event order: timestamp, reception, position in the request. (Events equal in all three, from
 * two requests received in the same millisecond, are never written by the tests: their requests are
 * at least 2 ms apart.)
 */
const byEventOrder = (a: RefEvent, b: RefEvent) => a.t - b.t || a.r - b.r || a.seq - b.seq;

/** Ordered: chains of distinct events in event order, steps 1..j, last - first <= window. */
function reachOrdered(evs: RefEvent[], steps: Pred[], w: number): Reach {
  const k = steps.length;
  // best[j][p]: the latest start of a chain of steps 1..j+1 ending at event p (null: none).
  const best: (number | null)[][] = steps.map(() => evs.map(() => null));
  const T: (number | null)[] = steps.map(() => null);
  const P: (number | null)[] = steps.map(() => null);
  evs.forEach((e, p) => {
    if (steps[0](e)) best[0][p] = e.t;
  });
  for (let j = 1; j < k; j++) {
    evs.forEach((e, p) => {
      if (!steps[j](e)) return;
      let start: number | null = null;
      let prevTime: number | null = null;
      for (let q = 0; q < p; q++) {
        const s = best[j - 1][q];
        if (s === null || e.t - s > w) continue;
        if (start === null || s > start) start = s;
        if (prevTime === null || evs[q].t > prevTime) prevTime = evs[q].t;
      }
      best[j][p] = start;
      if (start !== null && T[j] === null) {
        T[j] = e.t;
        P[j] = prevTime;
      }
    });
  }
  const first = evs.find((e) => steps[0](e));
  if (first) T[0] = P[0] = first.t;
  return { T, P };
}

/** Strict: the steps are consecutive events of the user's whole timeline. */
function reachStrict(evs: RefEvent[], steps: Pred[], w: number): Reach {
  const T: (number | null)[] = steps.map(() => null);
  const P: (number | null)[] = steps.map(() => null);
  for (let p = 0; p < evs.length; p++) {
    // The run of steps 1..j ending at p starts at p - j + 1.
    for (let j = 0; j < steps.length && j <= p; j++) {
      const from = p - j;
      let ok = evs[p].t - evs[from].t <= w;
      for (let i = 0; ok && i <= j; i++) ok = steps[i](evs[from + i]);
      if (ok && T[j] === null) {
        T[j] = evs[p].t;
        P[j] = j === 0 ? evs[p].t : evs[p - 1].t;
      }
    }
  }
  return { T, P };
}

/** Any order: steps 1..j each have an event within some window [x - w, x] (one event may serve several). */
function reachAny(evs: RefEvent[], steps: Pred[], w: number): Reach {
  const T: (number | null)[] = steps.map(() => null);
  const times = [...new Set(evs.map((e) => e.t))].sort((a, b) => a - b);
  for (let j = 0; j < steps.length; j++) {
    for (const x of times) {
      const covered = steps.slice(0, j + 1).every((step) => evs.some((e) => step(e) && e.t <= x && e.t >= x - w));
      if (covered) {
        T[j] = x;
        break;
      }
    }
  }
  return { T, P: T.map(() => null) };
}

/** R-7 quantile (linear interpolation between closest ranks). */
export function quantile(values: number[], p: number): number {
  const a = [...values].sort((x, y) => x - y);
  const h = p * (a.length - 1) + 1;
  const n = Math.floor(h);
  if (n >= a.length) return a[a.length - 1];
  if (n < 1) return a[0];
  return a[n - 1] + (h - n) * (a[n] - a[n - 1]);
}

// 4 decimals, half up, in big integers (exact for any count).
const ratio = (n: number, d: number) => (d === 0 ? null : Number((BigInt(n) * 20_000n + BigInt(d)) / (2n * BigInt(d))) / 10_000);

export interface RefFunnelQuery {
  steps: Pred[];
  windowMs: number;
  order: Order;
  range?: { start?: number; end?: number };
  /** The value of a step-1 event (undefined: the event has none); a user is in the funnel of each value they start from. */
  breakdown?: (e: RefEvent) => string | null;
  /** Users kept (a cohort); undefined: every user. */
  users?: Set<string>;
}

export interface RefStep {
  users: number;
  conversion_from_first: number | null;
  conversion_from_previous: number | null;
  median_seconds_from_previous: number | null;
  p90_seconds_from_previous: number | null;
}

function stepsOf(reaches: Reach[], k: number, order: Order): RefStep[] {
  const users = Array.from({ length: k }, (_, j) => reaches.filter((r) => r.T[j] !== null).length);
  return users.map((u, j) => {
    const dts = reaches.filter((r) => r.T[j] !== null).map((r) => r.T[j]! - r.P[j]!);
    const timed = j > 0 && order !== 'any' && u > 0;
    return {
      users: u,
      conversion_from_first: ratio(u, users[0]),
      conversion_from_previous: j === 0 ? ratio(u, u) : ratio(u, users[j - 1]),
      median_seconds_from_previous: timed ? Math.round(quantile(dts, 0.5)) / 1000 : null,
      p90_seconds_from_previous: timed ? Math.round(quantile(dts, 0.9)) / 1000 : null,
    };
  });
}

function inRange(t: number, range?: { start?: number; end?: number }): boolean {
  return (range?.start === undefined || t >= range.start) && (range?.end === undefined || t <= range.end);
}

/** Events of each kept user in range, in event order. */
function timelines(events: RefEvent[], range: RefFunnelQuery['range'], users?: Set<string>): Map<string, RefEvent[]> {
  const out = new Map<string, RefEvent[]>();
  for (const e of events) {
    if (!inRange(e.t, range)) continue;
    if (users && !users.has(e.user)) continue;
    let list = out.get(e.user);
    if (!list) out.set(e.user, (list = []));
    list.push(e);
  }
  for (const list of out.values()) list.sort(byEventOrder);
  return out;
}

function reachOf(evs: RefEvent[], q: RefFunnelQuery, steps: Pred[]): Reach {
  if (q.order === 'strict') return reachStrict(evs, steps, q.windowMs);
  // Ordered and any read only the events of the steps (any other event changes nothing).
  const relevant = evs.filter((e) => steps.some((s) => s(e)));
  return q.order === 'ordered' ? reachOrdered(relevant, steps, q.windowMs) : reachAny(relevant, steps, q.windowMs);
}

export function refFunnel(events: RefEvent[], q: RefFunnelQuery): { steps: RefStep[]; buckets?: Map<string | null, RefStep[]> } {
  const k = q.steps.length;
  const lines = [...timelines(events, q.range, q.users).values()];
  const steps = stepsOf(lines.map((evs) => reachOf(evs, q, q.steps)), k, q.order);
  if (!q.breakdown) return { steps };
  const perValue = new Map<string | null, Reach[]>();
  for (const evs of lines) {
    const values = new Set(evs.filter(q.steps[0]).map(q.breakdown));
    for (const value of values) {
      const first: Pred = (e) => q.steps[0](e) && q.breakdown!(e) === value;
      const reach = reachOf(evs, q, [first, ...q.steps.slice(1)]);
      if (!perValue.has(value)) perValue.set(value, []);
      perValue.get(value)!.push(reach);
    }
  }
  return { steps, buckets: new Map([...perValue].map(([value, reaches]) => [value, stepsOf(reaches, k, q.order)])) };
}

// --- retention ---------------------------------------------------------------------------------

export type Period = 'day' | 'week' | 'month';

/** A number per UTC period that grows by one from a period to the next; and the period's start (ms). */
export function periodOf(t: number, period: Period): { index: number; start: number } {
  const d = new Date(t);
  const day = Math.floor(t / 86_400_000);
  if (period === 'day') return { index: day, start: day * 86_400_000 };
  if (period === 'week') {
    // 1970-01-01 was a Thursday: Monday-based weeks start 3 days before it.
    const week = Math.floor((day + 3) / 7);
    return { index: week, start: (week * 7 - 3) * 86_400_000 };
  }
  return { index: d.getUTCFullYear() * 12 + d.getUTCMonth(), start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) };
}

export interface RefRetentionQuery {
  start: Pred;
  /** null: any event. */
  ret: Pred | null;
  period: Period;
  periods: number;
  range?: { start?: number; end?: number };
  users?: Set<string>;
}

export interface RefCohort {
  start: string;
  users: number;
  returned: number[];
}

export function refRetention(events: RefEvent[], q: RefRetentionQuery): RefCohort[] {
  const byUser = new Map<string, RefEvent[]>();
  for (const e of events) {
    if (q.users && !q.users.has(e.user)) continue;
    if (!byUser.has(e.user)) byUser.set(e.user, []);
    byUser.get(e.user)!.push(e);
  }
  const cohorts = new Map<number, { start: number; users: number; returned: number[] }>();
  for (const evs of byUser.values()) {
    const starts = evs.filter((e) => q.start(e) && inRange(e.t, q.range));
    if (starts.length === 0) continue;
    const first = periodOf(Math.min(...starts.map((e) => e.t)), q.period);
    const returns = new Set(evs.filter((e) => q.ret === null || q.ret(e)).map((e) => periodOf(e.t, q.period).index));
    let c = cohorts.get(first.index);
    if (!c) cohorts.set(first.index, (c = { start: first.start, users: 0, returned: Array(q.periods).fill(0) }));
    c.users++;
    for (let i = 0; i < q.periods; i++) if (returns.has(first.index + i + 1)) c.returned[i]++;
  }
  return [...cohorts.entries()].sort(([a], [b]) => a - b).map(([, c]) => ({
    start: `${new Date(c.start).toISOString().slice(0, 10)}T00:00:00.000000Z`,
    users: c.users,
    returned: c.returned,
  }));
}

// --- cohorts -----------------------------------------------------------------------------------

export interface RefAnswer {
  question_correlation_id: string;
  cta_type: string;
  v_s?: string;
  v_d?: number;
  v_b?: boolean;
}

export interface RefResponse {
  survey_id: string;
  respondent_aliases: string[];
  created_at: number;
  completion: string;
  answers: RefAnswer[];
}

const NUMERIC = /^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$/;
export const scoreOf = (a: RefAnswer): number | null => (a.v_d !== undefined ? a.v_d : a.v_s !== undefined && NUMERIC.test(a.v_s) ? Number(a.v_s) : null);
export const valueOf = (a: RefAnswer): string => (a.v_s !== undefined ? a.v_s : a.v_d !== undefined ? String(a.v_d) : a.v_b !== undefined ? String(a.v_b) : '');

export const NPS_RANGES = { detractor: [0, 6], neutral: [7, 8], promotor: [9, 10] } as const;

/** The aliases of the responses that pass `test`: the users of a survey cohort. */
export function refSurveyCohort(responses: RefResponse[], test: (r: RefResponse) => boolean): Set<string> {
  const out = new Set<string>();
  for (const r of responses) if (test(r)) for (const a of r.respondent_aliases) out.add(a);
  return out;
}

/** The response has a whole-number NPS answer (cta_type nps, 0..10) in the group. */
export function inNpsGroup(r: RefResponse, group: keyof typeof NPS_RANGES): boolean {
  const [lo, hi] = NPS_RANGES[group];
  return r.answers.some((a) => {
    const s = scoreOf(a);
    return a.cta_type === 'nps' && s !== null && Number.isInteger(s) && s >= 0 && s <= 10 && s >= lo && s <= hi;
  });
}

// --- stickiness --------------------------------------------------------------------------------

/** Users by the number of distinct periods of the range in which they did the event, 1..max. */
export function refStickiness(events: RefEvent[], q: { event: Pred; period: Period; range?: { start?: number; end?: number }; users?: Set<string> }): { periods: number; users: number }[] {
  const active = new Map<string, Set<number>>();
  for (const e of events) {
    if (!q.event(e) || !inRange(e.t, q.range) || (q.users && !q.users.has(e.user))) continue;
    if (!active.has(e.user)) active.set(e.user, new Set());
    active.get(e.user)!.add(periodOf(e.t, q.period).index);
  }
  const counts = [...active.values()].map((s) => s.size);
  const max = counts.reduce((m, n) => Math.max(m, n), 0);
  return Array.from({ length: max }, (_, i) => ({ periods: i + 1, users: counts.filter((n) => n === i + 1).length }));
}
