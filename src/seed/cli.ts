/**
 * `tallyhouse seed`: writes synthetic survey responses. Progress goes to stderr (one line per
 * chunk, only for runs of several chunks); the result goes to stdout as the last line.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { parseSeedArgs } from './args.ts';
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
  const started = performance.now();
  const result = await seedResponses(client, {
    orgId: args.orgId,
    responses: args.responses,
    surveys: args.surveys,
    days: args.days,
    seed: args.seed,
    onProgress: (done, total) => {
      // A short run (one quick chunk) needs no progress line, only the result.
      if (done === total && performance.now() - started < 1000) return;
      const seconds = (performance.now() - started) / 1000;
      io.err(`seed: ${fmt(done)} / ${fmt(total)} responses (${((done / total) * 100).toFixed(1)}%), ${seconds.toFixed(1)} s, ${fmt(Math.round(done / seconds))} responses/s`);
    },
  });
  const rate = Math.round(result.inserted / Math.max(result.seconds, 0.001));
  io.out(`seeded ${fmt(result.inserted)} responses in ${result.seconds.toFixed(1)} s (${fmt(rate)} responses/s) for org ${args.orgId}, surveys ${result.surveyIds.join(',')}`);
}
