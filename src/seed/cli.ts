/**
 * `tallyhouse seed`: writes synthetic survey responses and/or events. Progress goes to stderr: a
 * bar with the rate and the time left on a terminal, else one plain line per chunk (logs, CI), and
 * nothing for a run of one quick chunk; the result goes to stdout as the last line.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import type { Database } from '../clickhouse/connection.ts';
import { SingleBar } from 'cli-progress';
import { parseSeedArgs, type SeedArgs } from './args.ts';
import { seedEvents } from './events.ts';
import { seedResponses } from './responses.ts';

export interface SeedIo {
  out: (line: string) => void;
  err: (line: string) => void;
  /** The stream for the progress bar when stderr is a terminal; plain lines otherwise. */
  terminal?: NodeJS.WriteStream;
}

const defaultIo: SeedIo = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
  terminal: process.stderr.isTTY ? process.stderr : undefined,
};

const fmt = (n: number) => n.toLocaleString('en-US');

/** `db`: the service's database when there is one (a cluster's events are numbered through it, as the demo's are). */
export async function runSeedCommand(client: ClickHouseClient, argv: string[], io: SeedIo = defaultIo, db?: Database): Promise<void> {
  const args = parseSeedArgs(argv);
  if (args.orgGenerated) io.err(`no --org given: seeding new organization ${args.orgId}`);
  if (args.responses > 0) await seedResponsesCommand(client, args, io);
  if (args.events > 0) await seedEventsCommand(client, args, io, db);
}

/** Progress of one run: a bar on a terminal, else one line per chunk (none for a run under a second). */
interface Progress {
  update(done: number, total: number): void;
  stop(): void;
}

function progress(io: SeedIo, what: string, started: number, total: number): Progress {
  const bar = io.terminal ? progressBar(io.terminal, what, total) : undefined;
  return {
    update: (done, all) => {
      const seconds = (performance.now() - started) / 1000;
      const rate = Math.round(done / Math.max(seconds, 0.001));
      if (bar) {
        bar.update(done, { rate: fmt(rate) });
        return;
      }
      if (done === all && seconds < 1) return;
      const eta = done < all ? `, about ${Math.ceil((all - done) / Math.max(rate, 1))} s left` : '';
      io.err(`seed: ${fmt(done)} / ${fmt(all)} ${what} (${((done / all) * 100).toFixed(1)}%), ${seconds.toFixed(1)} s, ${fmt(rate)} ${what}/s${eta}`);
    },
    stop: () => bar?.stop(),
  };
}

/** On a terminal: one line redrawn in place, with the rate and cli-progress's ETA. */
function progressBar(stream: NodeJS.WriteStream, what: string, total: number): SingleBar {
  const bar = new SingleBar({
    stream,
    format: `seed [{bar}] {percentage}% | {value}/{total} ${what} | {rate} ${what}/s | ETA {eta_formatted}`,
    formatValue: (v, _options, type) => (type === 'value' || type === 'total' ? fmt(v) : String(v)),
    hideCursor: true,
    etaBuffer: 20,
  });
  bar.start(total, 0, { rate: '-' });
  return bar;
}

/** Runs `fn` with a progress display that is stopped (the bar's line ended) whatever happens. */
async function withProgress<T>(io: SeedIo, what: string, total: number, fn: (p: Progress) => Promise<T>): Promise<T> {
  const p = progress(io, what, performance.now(), total);
  try {
    return await fn(p);
  } finally {
    p.stop();
  }
}

async function seedEventsCommand(client: ClickHouseClient, args: SeedArgs, io: SeedIo, db?: Database): Promise<void> {
  const result = await withProgress(io, 'events', args.events, (p) =>
    seedEvents(client, { orgId: args.orgId, events: args.events, days: args.days, db, onProgress: (done, total) => p.update(done, total) }),
  );
  const rate = Math.round(result.inserted / Math.max(result.seconds, 0.001));
  io.out(`seeded ${fmt(result.inserted)} events of ${fmt(result.users)} users in ${result.seconds.toFixed(1)} s (${fmt(rate)} events/s) for org ${args.orgId}`);
}

async function seedResponsesCommand(client: ClickHouseClient, args: SeedArgs, io: SeedIo): Promise<void> {
  const result = await withProgress(io, 'responses', args.responses, (p) =>
    seedResponses(client, {
      orgId: args.orgId,
      responses: args.responses,
      surveys: args.surveys,
      days: args.days,
      seed: args.seed,
      onProgress: (done, total) => p.update(done, total),
    }),
  );
  const rate = Math.round(result.inserted / Math.max(result.seconds, 0.001));
  io.out(`seeded ${fmt(result.inserted)} responses in ${result.seconds.toFixed(1)} s (${fmt(rate)} responses/s) for org ${args.orgId}, surveys ${result.surveyIds.join(',')}`);
}
