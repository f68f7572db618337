/**
 * `tallyhouse seed`: writes synthetic survey responses and/or events. Progress goes to stderr (one line per
 * chunk, only for runs of several chunks); the result goes to stdout as the last line.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { parseSeedArgs, type SeedArgs } from './args.ts';
import { seedEvents } from './events.ts';
import { seedResponses } from './responses.ts';

export interface SeedIo {
  out: (line: string) => void;
  err: (line: string) => void;
}

const defaultIo: SeedIo = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
};

const fmt = (n: number) => n.toLocaleString('en-US');

export async function runSeedCommand(client: ClickHouseClient, argv: string[], io: SeedIo = defaultIo): Promise<void> {
  const args = parseSeedArgs(argv);
  if (args.orgGenerated) io.err(`no --org given: seeding new organization ${args.orgId}`);
  if (args.responses > 0) await seedResponsesCommand(client, args, io);
  if (args.events > 0) await seedEventsCommand(client, args, io);
}

/** One progress line per chunk on stderr, except for a run that finishes within a second. */
function progress(io: SeedIo, what: string, started: number) {
  return (done: number, total: number) => {
    if (done === total && performance.now() - started < 1000) return;
    const seconds = (performance.now() - started) / 1000;
    io.err(`seed: ${fmt(done)} / ${fmt(total)} ${what} (${((done / total) * 100).toFixed(1)}%), ${seconds.toFixed(1)} s, ${fmt(Math.round(done / seconds))} ${what}/s`);
  };
}

async function seedEventsCommand(client: ClickHouseClient, args: SeedArgs, io: SeedIo): Promise<void> {
  const result = await seedEvents(client, { orgId: args.orgId, events: args.events, days: args.days, onProgress: progress(io, 'events', performance.now()) });
  const rate = Math.round(result.inserted / Math.max(result.seconds, 0.001));
  io.out(`seeded ${fmt(result.inserted)} events of ${fmt(result.users)} users in ${result.seconds.toFixed(1)} s (${fmt(rate)} events/s) for org ${args.orgId}`);
}

async function seedResponsesCommand(client: ClickHouseClient, args: SeedArgs, io: SeedIo): Promise<void> {
  const started = performance.now();
  const result = await seedResponses(client, {
    orgId: args.orgId,
    responses: args.responses,
    surveys: args.surveys,
    days: args.days,
    seed: args.seed,
    onProgress: progress(io, 'responses', started),
  });
  const rate = Math.round(result.inserted / Math.max(result.seconds, 0.001));
  io.out(`seeded ${fmt(result.inserted)} responses in ${result.seconds.toFixed(1)} s (${fmt(rate)} responses/s) for org ${args.orgId}, surveys ${result.surveyIds.join(',')}`);
}
