/**
 * `npm run bench`: the short version of every bench, one after the other (under 5 minutes on a
 * 2-core machine). Longer and larger runs: run each bench's own entry with its flags (see
 * bench/README.md).
 *
 *   npm run bench                     ingest (short) then query (short)
 *   npm run bench -- --only ingest    one of them
 */
import { parseFlags } from './lib/args.ts';
import { runIngestBench } from './ingest/run.ts';
import { runQueryBench } from './query/run.ts';

const USAGE = `usage: npm run bench [-- --only ingest|query]
Longer runs: node --import tsx bench/ingest/run.ts --help (and bench/query/run.ts --help).`;

async function main(): Promise<number> {
  const flags = parseFlags(process.argv.slice(2), { only: { type: 'string' }, help: { type: 'boolean' } }, USAGE);
  if (flags.help) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const only = flags.only;
  if (only !== undefined && only !== 'ingest' && only !== 'query') {
    process.stderr.write(`--only must be ingest or query\n${USAGE}\n`);
    return 2;
  }
  let failed = false;
  const started = Date.now();

  if (only !== 'query') {
    process.stdout.write('\n=== ingest bench (short) ===\n');
    const r = await runIngestBench({});
    failed ||= r.targets.some((t) => t.target.includes('stored rows') && t.ok === false);
  }

  if (only !== 'ingest') {
    process.stdout.write('\n=== query bench (short) ===\n');
    if (process.env.CLICKHOUSE_URL) {
      process.stdout.write('CLICKHOUSE_URL is set: the query bench measures the embedded engine only, skipped\n');
    } else {
      await runQueryBench({ short: true });
    }
  }

  process.stdout.write(`\nbench done in ${Math.round((Date.now() - started) / 1000)} s\n`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`bench failed: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
