/**
 * Realistic event batches, as a product backend sends them: mostly `track` and `page`, some
 * `identify`, `screen` and group changes, and copilot conversations whose prompts and responses
 * are long free text. Deterministic (seeded), so two runs send the same bytes.
 *
 * The mix, per 100 events on average:
 *   track 45, page 28, identify 8, screen 5, group.assign 3, group.unassign 1,
 *   copilot 10 (user_prompt 4, response 4, satisfaction 1, conversion 1).
 * Prompts are 200..3,000 characters, responses 500..8,000: a 100-event batch is ~45 KB of JSON.
 */

import { AGENTS, EVENT_LOCALES as LOCALES, PLANS, SCREENS, SECTIONS, SOURCES, TRACK_NAMES, ZONES } from '../../src/seed/event-vocabulary.ts';

export interface GeneratorOptions {
  seed?: number;
  /** Events per batch (the endpoint takes 1..100). */
  batchSize?: number;
  /** Distinct users; 15% of events carry no user_alias (anonymous). */
  users?: number;
  /** Timestamps are spread over this many ms before `now` (60% of events carry one). */
  spreadMs?: number;
  /** Every item carries a `message_id` (default); false: none does (the price of exactly-once). */
  messageIds?: boolean;
  now?: number;
}

/** mulberry32: a small, fast, seedable PRNG. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  'the a to of and in is it for on with as this that by be are from at or an have not can will your you we our ' +
  'report dashboard query customer account invoice export filter chart metric revenue churn cohort segment ' +
  'survey response score release version deploy pipeline error latency timeout retry table column index ' +
  'please could would should how why what when where which show explain compare summarize list create update ' +
  'last week month quarter year today yesterday trend increase decrease average median total count per by ' +
  'user users team teams plan plans pro enterprise trial onboarding feature features settings permission role ' +
  'data warehouse sync integration webhook api token key limit rate batch event events property properties'
).split(' ');

export function generateEvents(r: () => number, opts: Required<Omit<GeneratorOptions, 'seed' | 'messageIds'>>): unknown[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  const text = (minChars: number, maxChars: number) => {
    const target = int(minChars, maxChars);
    const parts: string[] = [];
    let len = 0;
    while (len < target) {
      const sentence = Array.from({ length: int(6, 18) }, () => pick(WORDS)).join(' ');
      const s = sentence[0].toUpperCase() + sentence.slice(1) + (r() < 0.15 ? '?' : '.');
      parts.push(s);
      len += s.length + 1;
    }
    return parts.join(' ').slice(0, maxChars);
  };
  const user = () => `user-${int(1, opts.users)}`;
  const common = (anonymousShare = 0.15) => {
    const e: Record<string, unknown> = {};
    if (r() >= anonymousShare) e.user_alias = user();
    if (r() < 0.6) e.timestamp = new Date(opts.now - Math.floor(r() * opts.spreadMs)).toISOString();
    if (r() < 0.5) e.context = { locale: pick(LOCALES), timezone: pick(ZONES) };
    return e;
  };
  const conversation = () => ({ conversation_id: `conv-${int(1, 50_000)}`, copilot_session_id: `sess-${int(1, 20_000)}` });

  const events: unknown[] = [];
  for (let i = 0; i < opts.batchSize; i++) {
    const x = r() * 100;
    if (x < 45) {
      const name = TRACK_NAMES[Math.floor(TRACK_NAMES.length * r() * r())]; // skewed: a few names dominate
      const properties: Record<string, unknown> = { source: pick(SOURCES), plan: pick(PLANS) };
      for (let k = int(1, 5); k > 0; k--) {
        const key = pick(['item_id', 'price', 'currency', 'quantity', 'duration_ms', 'success', 'category', 'query', 'count']);
        properties[key] = key === 'price' ? Math.round(r() * 50_000) / 100 : key === 'success' ? r() < 0.9 : key === 'query' ? text(10, 60) : key === 'currency' ? 'EUR' : int(1, 100_000);
      }
      if (r() < 0.2) properties.experiment = { id: `exp-${int(1, 20)}`, variant: pick(['control', 'a', 'b']) };
      events.push({ type: 'track', event_name: name, ...common(), properties });
    } else if (x < 73) {
      const section = pick(SECTIONS);
      const url = `https://app.example.com/${section}/${int(1, 99_999)}${r() < 0.3 ? `?utm_source=${pick(SOURCES)}&utm_campaign=spring-${int(1, 40)}` : ''}`;
      events.push({ type: 'page', url, ...common(0.35), properties: { title: `${section[0].toUpperCase()}${section.slice(1)} | Example`, referrer: r() < 0.5 ? 'https://www.google.com/' : '' } });
    } else if (x < 81) {
      const u = int(1, opts.users);
      events.push({
        type: 'identify',
        user_alias: `user-${u}`,
        ...(r() < 0.5 ? { timestamp: new Date(opts.now - Math.floor(r() * opts.spreadMs)).toISOString() } : {}),
        properties: {
          email: `user${u}@example.com`,
          name: `User ${u}`,
          plan: pick(PLANS),
          company: `Company ${u % 997}`,
          seats: int(1, 500),
          country: pick(['FR', 'DE', 'US', 'GB', 'BR', 'JP', 'NL']),
          signed_up_at: new Date(opts.now - int(1, 900) * 86_400_000).toISOString(),
        },
      });
    } else if (x < 86) {
      events.push({ type: 'screen', screen_name: pick(SCREENS), ...common(), properties: { app_version: `3.${int(0, 20)}.${int(0, 9)}`, os: pick(['ios', 'android']) } });
    } else if (x < 90) {
      const type = x < 89 ? 'group.assign' : 'group.unassign';
      const groupType = pick(['company', 'team', 'workspace']);
      events.push({ type, user_alias: user(), group_type: groupType, group_name: `${groupType}-${int(1, 2000)}`, properties: { role: pick(['member', 'admin', 'owner']) } });
    } else {
      const base = { type: 'copilot', agent_id: pick(AGENTS), ...common(0) };
      if (x < 94) events.push({ ...base, event_name: 'service_copilot_user_prompt', ...conversation(), prompt: text(200, 3000) });
      else if (x < 98) events.push({ ...base, event_name: 'service_copilot_response', ...conversation(), response: text(500, 8000), properties: { model: 'large-2', tokens: int(100, 4000) } });
      else if (x < 99) events.push({ ...base, event_name: 'service_copilot_satisfaction', ...conversation(), rating: String(int(1, 5)), rating_scale: '1-5' });
      else events.push({ ...base, event_name: 'service_copilot_conversion', properties: { action: pick(['query_saved', 'report_created', 'ticket_closed']) } });
    }
  }
  return events;
}

export interface BatchPool {
  /** Pre-serialized request bodies: the load generator only writes bytes. */
  bodies: Buffer[];
  /** The same batches as parsed JSON (for the direct-insert limit). */
  batches: unknown[][];
  eventsPerBatch: number;
  meanBodyBytes: number;
  typeMix: Record<string, number>;
}

/**
 * Every item carries a `message_id` (the service deduplicates on it): `<16 hex>-<index>`, whose
 * 16 hex characters the load generator overwrites per request (MessageIds.stamp), so the bodies
 * stay serialized once and every request's ids are new, unless it is sent again on purpose.
 */
export const MESSAGE_ID_PLACEHOLDER = '@'.repeat(16);

/** Stamps request numbers into the pool's bodies: a copy per request, ids unique within the run. */
export class MessageIds {
  private readonly offsets: number[][];
  private readonly runPrefix = Math.floor(Math.random() * 0xffffff).toString(16).padStart(6, '0');
  constructor(private readonly bodies: readonly Buffer[]) {
    const marker = Buffer.from(MESSAGE_ID_PLACEHOLDER);
    this.offsets = bodies.map((b) => {
      const at: number[] = [];
      for (let i = b.indexOf(marker); i !== -1; i = b.indexOf(marker, i + marker.length)) at.push(i);
      return at;
    });
  }
  /** Body `index % pool` with the ids of request `seq`: 6 hex of the run, 10 of the request. */
  stamp(index: number, seq: number): Buffer {
    const i = index % this.bodies.length;
    const out = Buffer.from(this.bodies[i]);
    const id = Buffer.from(this.runPrefix + seq.toString(16).padStart(10, '0'), 'latin1');
    for (const at of this.offsets[i]) id.copy(out, at);
    return out;
  }
}

export function generatePool(count: number, opts: GeneratorOptions = {}): BatchPool {
  const r = rng(opts.seed ?? 42);
  const full = {
    batchSize: opts.batchSize ?? 100,
    users: opts.users ?? 20_000,
    spreadMs: opts.spreadMs ?? 3_600_000,
    now: opts.now ?? Date.now(),
  };
  const withIds = opts.messageIds ?? true;
  const batches = Array.from({ length: count }, () =>
    generateEvents(r, full).map((e, i) => (withIds ? { ...(e as object), message_id: `${MESSAGE_ID_PLACEHOLDER}-${i}` } : e)),
  );
  const bodies = batches.map((b) => Buffer.from(JSON.stringify(b)));
  const typeMix: Record<string, number> = {};
  for (const b of batches) {
    for (const e of b as unknown as Array<{ type: string; event_name?: string }>) {
      const k = e.type === 'copilot' ? `copilot:${e.event_name!.replace('service_copilot_', '')}` : e.type;
      typeMix[k] = (typeMix[k] ?? 0) + 1;
    }
  }
  const total = count * full.batchSize;
  for (const k of Object.keys(typeMix)) typeMix[k] = Math.round((typeMix[k] / total) * 1000) / 10;
  return {
    bodies,
    batches,
    eventsPerBatch: full.batchSize,
    meanBodyBytes: Math.round(bodies.reduce((s, b) => s + b.length, 0) / count),
    typeMix,
  };
}
