/**
 * The service's per-event CPU of POST /1.0/event in one process, this checkout against another
 * (`--old DIR`), alternated round by round: the ingest bench's own bodies (its pool, message ids
 * stamped as its load generator does, 16 organizations new every round, so that users are met for
 * the first time about as often as in a bench phase) go through the body's decoding and JSON.parse
 * (src/server/body.ts's `parseJsonBody` where the checkout has it, else TextDecoder + JSON.parse)
 * and the walk (`encodeEventBatch`). The per-run bench figure cannot resolve a 1-2 µs change: this
 * can, as medians of many rounds. CPU of the process (user + system) per event, both codes alike.
 *
 *   node --expose-gc --import tsx bench/ingest/inprocess.ts [--old /work/wt/final16] [--rounds 12] [--requests 3072]
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { generatePool, MessageIds } from './events.ts';

const { values: f } = parseArgs({
  options: { old: { type: 'string' }, rounds: { type: 'string' }, requests: { type: 'string' }, orgs: { type: 'string' } },
});
const oldDir = f.old ?? '/work/wt/final16';
const rounds = Number(f.rounds ?? 12);
const requests = Number(f.requests ?? 3072);
const orgCount = Number(f.orgs ?? 16);

interface Code {
  name: string;
  encode: (raw: unknown, orgId: string, receivedAt: Date) => { rows: number };
  parse: (bytes: Buffer) => unknown;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
async function load(name: string, dir: string): Promise<Code> {
  const encode = await import(`${dir}/src/events/encode.ts`);
  const body = await import(`${dir}/src/server/body.ts`);
  const parse = body.parseJsonBody ?? ((bytes: Buffer) => JSON.parse(utf8.decode(bytes)));
  return { name, encode: encode.encodeEventBatch, parse };
}

const here = new URL('../..', import.meta.url).pathname.replace(/\/$/, '');
const codes = [await load('old', oldDir), await load('new', here)];
const pool = generatePool(64, { batchSize: 100, users: 20_000 });
const ids = new MessageIds(pool.bodies);
const bodies = Array.from({ length: requests }, (_, i) => ids.stamp(i, i));
const gc = (globalThis as { gc?: () => void }).gc;

function run(code: Code, orgs: string[]): number {
  gc?.();
  const t0 = process.cpuUsage();
  let rows = 0;
  // Body i % pool; the organization moves on by one every lap of the pool, so that each meets
  // every body (3 times over 3,072 requests), as the bench's clients do (a token each, bodies in turn).
  for (let i = 0; i < bodies.length; i++) rows += code.encode(code.parse(bodies[i]), orgs[(i + Math.floor(i / pool.bodies.length)) % orgs.length], new Date()).rows;
  const t = process.cpuUsage(t0);
  return (t.user + t.system) / rows;
}

// Warm-up: both codes optimized before the first measured round.
for (const c of codes) run(c, Array.from({ length: orgCount }, () => randomUUID()));
const per: Record<string, number[]> = { old: [], new: [] };
for (let r = 0; r < rounds; r++) {
  const orgs = Array.from({ length: orgCount }, () => randomUUID());
  const order = r % 2 === 0 ? codes : [...codes].reverse();
  for (const c of order) per[c.name].push(run(c, orgs));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (x: number) => x.toFixed(2);
process.stdout.write(`rounds ${rounds} x ${requests} requests (${requests * 100} events), ${orgCount} new organizations a round\n`);
for (const c of codes) process.stdout.write(`${c.name}: median ${fmt(median(per[c.name]))} µs/event (${per[c.name].map(fmt).join(' ')})\n`);
const diffs = per.old.map((o, i) => o - per.new[i]);
process.stdout.write(`old - new, per round: median ${fmt(median(diffs))} µs/event (${diffs.map(fmt).join(' ')})\n`);
