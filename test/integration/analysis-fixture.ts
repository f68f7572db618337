/**
 * Writing random event histories for the funnel, retention and cohort tests, and reading them
 * back as the reference sees them (funnel-reference.ts): every item is sent through POST
 * /1.0/event with a message_id, so the stored event (its timestamp, reception time and id, from
 * event search) is matched to its place in its request (seq).
 */
import { expect } from 'chai';
import fc from 'fast-check';
import type { RefEvent } from './funnel-reference.ts';
import type { TestService } from './harness.ts';

export const NAMES = ['a', 'b', 'c'] as const;
export const ALIASES = ['u1', 'u2', 'u3', 'u4'] as const;
export const PLANS = ['pro', 'free', 5, true] as const;

export interface GenEvent {
  alias: string | null;
  kind: 'track' | 'page';
  name: string;
  day: number;
  /** Seconds on a 10 s grid within the day: equal timestamps and window edges are frequent. */
  second: number;
  /** A few milliseconds added to some events. */
  ms: number;
  plan?: (typeof PLANS)[number];
}

export const genEvent: fc.Arbitrary<GenEvent> = fc.record({
  alias: fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...ALIASES) }, { weight: 1, arbitrary: fc.constant(null) }),
  kind: fc.oneof({ weight: 5, arbitrary: fc.constant('track' as const) }, { weight: 1, arbitrary: fc.constant('page' as const) }),
  name: fc.constantFrom(...NAMES),
  day: fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 4 }) }),
  second: fc.integer({ min: 0, max: 6 }).map((x) => x * 10),
  ms: fc.oneof({ weight: 8, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 999 }) }),
  plan: fc.option(fc.constantFrom(...PLANS), { nil: undefined }),
});

/** Events and how they are cut into requests (sent in this shuffled order). */
export const genHistory = fc
  .array(genEvent, { minLength: 30, maxLength: 100, size: 'max' })
  .chain((events) => fc.tuple(fc.constant(events), fc.shuffledSubarray(events.map((_, i) => i), { minLength: events.length, maxLength: events.length }), fc.integer({ min: 1, max: 4 })));

/** Midnight UTC five days ago: day 0..4 of a history stay within the 7 days an event timestamp may be old. */
export function historyBase(now = Date.now()): number {
  return Math.floor(now / 86_400_000) * 86_400_000 - 5 * 86_400_000;
}

export function eventTime(base: number, e: GenEvent): number {
  return base + e.day * 86_400_000 + e.second * 1000 + e.ms;
}

/**
 * Sends the events (in `order`, cut into `batches` requests, one after the other and at least
 * 2 ms apart, so that no two requests share a reception millisecond) and reads them back.
 */
export async function writeHistory(svc: TestService, write: string, read: string, base: number, events: GenEvent[], order: number[], batches: number): Promise<RefEvent[]> {
  const items = order.map((i, n) => {
    const e = events[i];
    return {
      type: e.kind,
      ...(e.kind === 'track' ? { event_name: e.name } : { url: `https://example.com/${e.name}` }),
      ...(e.alias === null ? {} : { user_alias: e.alias }),
      timestamp: new Date(eventTime(base, e)).toISOString(),
      properties: e.plan === undefined ? {} : { plan: e.plan },
      message_id: `m-${n}`,
    };
  });
  const seqOf = new Map<string, number>();
  const size = Math.ceil(items.length / batches);
  for (let from = 0; from < items.length; from += size) {
    const batch = items.slice(from, from + size);
    batch.forEach((item, seq) => seqOf.set(item.message_id, seq));
    const res = await svc.request('POST', '/1.0/event', { token: write, body: batch });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    await new Promise((r) => setTimeout(r, 2));
  }
  return readEvents(svc, read, seqOf);
}

/** Every stored event of the token's organization, as the reference reads it. */
export async function readEvents(svc: TestService, read: string, seqOf: Map<string, number>): Promise<RefEvent[]> {
  const out: RefEvent[] = [];
  let cursor: string | undefined;
  do {
    const res = await svc.request('SEARCH', '/1.0/event', { token: read, body: { size: 1000, ...(cursor ? { cursor } : {}) } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    for (const r of res.body.hits.events) {
      out.push({
        user: r.anonymous ? r.event_id : r.user_alias,
        alias: r.anonymous ? null : r.user_alias,
        t: Date.parse(r.timestamp),
        r: Date.parse(r.received_at),
        seq: seqOf.get(r.message_id) ?? 0,
        id: r.event_id,
        type: r.type,
        name: r.event_name ?? '',
        url: r.url ?? '',
        props: r.properties,
        rating: r.rating ?? '',
      });
    }
    cursor = res.body.next_cursor;
  } while (cursor);
  return out;
}
