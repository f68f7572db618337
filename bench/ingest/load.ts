import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { PerSecond, summarize, type LatencySummary } from '../lib/stats.ts';
import type { MessageIds } from './events.ts';

/**
 * The HTTP load generator: node:http over keep-alive sockets, pre-serialized bodies, one
 * completion callback per request. Two shapes:
 *
 * - closed loop: `concurrency` clients, each sending its next request as soon as the previous one
 *   is answered. Measures the maximum throughput; its latencies are optimistic (a slow answer
 *   delays the next request, so the load backs off exactly when the service is slow).
 * - open loop: requests start at a fixed arrival rate whatever the answers do, and each latency is
 *   measured from the time the request was *due*, not sent. A stall then shows in every request
 *   that should have been sent meanwhile: no coordinated omission.
 */
export interface LoadTarget {
  url: string;
  /** Requests go round-robin over these tokens (one organization each). */
  tokens: string[];
  bodies: Buffer[];
  /** When given, every request gets fresh message_ids stamped into its body (a copy). */
  ids?: MessageIds;
}

/** Request `seq`'s body: pool body seq % pool, with ids of its own when the target stamps them. */
const bodyOf = (target: LoadTarget, seq: number) => (target.ids ? target.ids.stamp(seq, seq) : target.bodies[seq % target.bodies.length]);

export interface LoadResult {
  mode: 'closed' | 'open';
  /** Measured window (after warm-up), seconds. */
  seconds: number;
  /** Requests answered 200 within the window (by completion time), and their events. */
  ok_requests: number;
  ok_events: number;
  events_per_s: number;
  requests_per_s: number;
  /** Ack latency of the 200 answers to requests of the window (open loop: due in it; a dropped
   * request counts as an infinite latency), ms. */
  latency_ms: LatencySummary;
  /** The same, over the requests actually answered 200 (dropped ones left out). */
  answered_latency_ms: LatencySummary;
  /** Latency of the 503 answers to requests of the window (open loop: from the due time). */
  refused_latency_ms: LatencySummary;
  /** Non-200 answers and network errors in the window, by status ('error' for network). */
  failures: Record<string, number>;
  failure_sample: string | undefined;
  /** Every request of the phase, warm-up included: acknowledged events (resends included). */
  acked_events_total: number;
  /** The same, counting each request once however often it was sent: what must be in the table. */
  distinct_acked_events_total: number;
  /** Requests sent again after their 200 (same body, same message_ids), and the `duplicates` all 200s reported. */
  resent_requests_total: number;
  duplicates_reported_total: number;
  /** Requests with no answer (network error or timeout): their fate is unknown. */
  unknown_requests_total: number;
  per_second_events: number[];
  /** Open loop: the arrival rate asked for, and the requests due in the window. */
  target_rate?: number;
  due_requests?: number;
  max_outstanding?: number;
  /** Open loop: how long the last answers took to arrive after the last request was due. */
  drain_seconds?: number;
}

interface Sample {
  status: number;
  count: number;
  duplicates?: number;
  error?: string;
}

const REQUEST_TIMEOUT_MS = 60_000;

function post(agent: http.Agent, url: URL, token: string, body: Buffer): Promise<Sample> {
  return new Promise((resolve) => {
    const req = http.request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path: '/1.0/event',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': body.length },
        timeout: REQUEST_TIMEOUT_MS,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode === 200) {
            try {
              const ack = JSON.parse(text) as { count: number; duplicates?: number };
              return resolve({ status: 200, count: ack.count, duplicates: ack.duplicates ?? 0 });
            } catch {
              return resolve({ status: -1, count: 0, error: `unparsable 200 body: ${text.slice(0, 200)}` });
            }
          }
          resolve({ status: res.statusCode ?? -1, count: 0, error: text.slice(0, 300) });
        });
        res.on('error', (err) => resolve({ status: -1, count: 0, error: String(err) }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('client timeout')));
    req.on('error', (err) => resolve({ status: -1, count: 0, error: String(err) }));
    req.end(body);
  });
}

class Recorder {
  readonly latencies: number[] = [];
  readonly refusedLatencies: number[] = [];
  readonly failures: Record<string, number> = {};
  failureSample: string | undefined;
  okRequests = 0;
  okEvents = 0;
  ackedTotal = 0;
  distinctAckedTotal = 0;
  resentTotal = 0;
  duplicatesTotal = 0;
  private readonly ackedSeqs = new Set<number>();
  unknownTotal = 0;
  readonly perSecond: PerSecond;
  constructor(private readonly measureFrom: number, private readonly measureTo: number) {
    this.perSecond = new PerSecond(measureFrom);
  }
  /**
   * `classAt` decides whether a sample is in the window (the closed loop: its completion; the open
   * loop: its due time, so that a late answer to a request due in the window still counts); the
   * throughput counts answers *completed* in the window, so a service that falls behind an open
   * loop shows a rate below the offered one.
   */
  add(s: Sample, latencyMs: number, classAt: number, doneAt: number, seq: number) {
    if (s.status === 200) {
      this.ackedTotal += s.count;
      this.duplicatesTotal += s.duplicates ?? 0;
      if (!this.ackedSeqs.has(seq)) {
        this.ackedSeqs.add(seq);
        this.distinctAckedTotal += s.count;
      }
    }
    if (s.status === -1) this.unknownTotal++;
    if (s.status === 200 && doneAt >= this.measureFrom && doneAt <= this.measureTo) {
      this.okRequests++;
      this.okEvents += s.count;
      this.perSecond.add(doneAt, s.count);
    }
    if (classAt < this.measureFrom || classAt > this.measureTo) return;
    if (s.status === 200) {
      this.latencies.push(latencyMs);
    } else {
      const key = s.status === -1 ? 'error' : String(s.status);
      this.failures[key] = (this.failures[key] ?? 0) + 1;
      if (s.status === 503) this.refusedLatencies.push(latencyMs);
      this.failureSample ??= `${key}: ${s.error}`;
    }
  }
  /** A request the open loop did not send (backlog full): an error with an infinite latency. */
  drop(dueAt: number) {
    if (dueAt < this.measureFrom || dueAt > this.measureTo) return;
    this.failures.dropped = (this.failures.dropped ?? 0) + 1;
    this.failureSample ??= 'dropped: not sent, the client backlog was full (the service is not keeping up)';
    this.latencies.push(Infinity);
  }
  result(mode: 'closed' | 'open', seconds: number): LoadResult {
    return {
      mode,
      seconds,
      ok_requests: this.okRequests,
      ok_events: this.okEvents,
      events_per_s: this.okEvents / seconds,
      requests_per_s: this.okRequests / seconds,
      latency_ms: summarize(this.latencies),
      answered_latency_ms: summarize(this.latencies.filter(Number.isFinite)),
      refused_latency_ms: summarize(this.refusedLatencies),
      failures: this.failures,
      failure_sample: this.failureSample,
      acked_events_total: this.ackedTotal,
      distinct_acked_events_total: this.distinctAckedTotal,
      resent_requests_total: this.resentTotal,
      duplicates_reported_total: this.duplicatesTotal,
      unknown_requests_total: this.unknownTotal,
      per_second_events: this.perSecond.values(seconds),
    };
  }
}

export interface ClosedLoopOptions {
  concurrency: number;
  seconds: number;
  warmupSeconds: number;
  /**
   * Share (0..1) of acknowledged requests each client sends again right away, same body and
   * message_ids, as a client does that lost an answer: the service must store nothing twice.
   */
  resendShare?: number;
}

export async function closedLoop(target: LoadTarget, opts: ClosedLoopOptions): Promise<LoadResult> {
  const url = new URL(target.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.concurrency });
  const start = performance.now();
  const measureFrom = start + opts.warmupSeconds * 1000;
  const end = measureFrom + opts.seconds * 1000;
  const rec = new Recorder(measureFrom, end);
  let next = 0;
  // Every k-th acknowledged request is resent (deterministic, so runs compare).
  const resendEvery = opts.resendShare ? Math.max(1, Math.round(1 / opts.resendShare)) : 0;
  let acked = 0;
  const worker = async (w: number) => {
    const token = target.tokens[w % target.tokens.length];
    while (performance.now() < end) {
      const seq = next++;
      const body = bodyOf(target, seq);
      for (let send = 0; send < 2; send++) {
        const t0 = performance.now();
        const s = await post(agent, url, token, body);
        const t1 = performance.now();
        rec.add(s, t1 - t0, t1, t1, seq);
        // A failing service answers fast: don't spin on it.
        if (s.status !== 200) await new Promise((r) => setTimeout(r, 10));
        if (s.status !== 200 || send === 1 || !resendEvery || ++acked % resendEvery !== 0 || performance.now() >= end) break;
        rec.resentTotal++;
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, (_, w) => worker(w)));
  agent.destroy();
  return rec.result('closed', opts.seconds);
}

export interface OpenLoopOptions {
  /** Requests per second. */
  rate: number;
  seconds: number;
  warmupSeconds: number;
  /** Sockets the client may open; requests beyond wait in the client (and that wait counts). */
  maxSockets: number;
  /**
   * Requests outstanding at most, as seconds of arrivals (rate x this). A request due while the
   * backlog is full is not sent: it counts as an error ("dropped") with an infinite latency, so an
   * overloaded service shows as such without a backlog that takes minutes to drain.
   */
  maxBacklogSeconds: number;
}

export async function openLoop(target: LoadTarget, opts: OpenLoopOptions): Promise<LoadResult> {
  const url = new URL(target.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.maxSockets });
  const interval = 1000 / opts.rate;
  const start = performance.now();
  const sendUntil = start + (opts.warmupSeconds + opts.seconds) * 1000;
  // Requests are classed by the time they were due: the window is [warm-up end, send end].
  const measureFrom = start + opts.warmupSeconds * 1000;
  const rec = new Recorder(measureFrom, sendUntil);
  const pending = new Set<Promise<void>>();
  let maxOutstanding = 0;
  let dueInWindow = 0;
  const maxBacklog = Math.max(1, Math.ceil(opts.rate * opts.maxBacklogSeconds));
  let i = 0;
  for (;;) {
    const now = performance.now();
    let due = start + i * interval;
    if (due >= sendUntil) break;
    while (due <= now && due < sendUntil) {
      const intended = due;
      if (intended >= measureFrom) dueInWindow++;
      if (pending.size >= maxBacklog) {
        rec.drop(intended);
        i++;
        due = start + i * interval;
        continue;
      }
      const seq = i;
      const body = bodyOf(target, seq);
      const p = post(agent, url, target.tokens[i % target.tokens.length], body).then((s) => {
        const t1 = performance.now();
        // Latency from the due time; classed by due time so a late answer still counts.
        rec.add(s, t1 - intended, intended, t1, seq);
        pending.delete(p);
      });
      pending.add(p);
      i++;
      due = start + i * interval;
    }
    maxOutstanding = Math.max(maxOutstanding, pending.size);
    await new Promise((r) => setTimeout(r, Math.max(0, Math.min(due, sendUntil) - performance.now())));
  }
  await Promise.all([...pending]);
  const drainSeconds = (performance.now() - sendUntil) / 1000;
  agent.destroy();
  // The per-second series is by due time: what was due in each second and answered OK.
  return { ...rec.result('open', opts.seconds), target_rate: opts.rate, due_requests: dueInWindow, max_outstanding: maxOutstanding, drain_seconds: drainSeconds };
}
