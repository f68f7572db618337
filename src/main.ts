import { UsageError } from './cli/args.ts';
import { demoBanner, ensureDemo } from './cli/demo.ts';
import { tokenCommand, TOKEN_USAGE } from './cli/token.ts';
import { connectDatabase, type Database } from './clickhouse/connection.ts';
import { migrate } from './clickhouse/migrations.ts';
import { CONFIG_KEYS, ConfigError, loadConfig, type Config } from './config.ts';
import { createLogger, type Logger } from './log.ts';
import { parseSeedArgs } from './seed/args.ts';
import { runSeedCommand } from './seed/cli.ts';
import { ROLLUPS_USAGE, parseRollupsArgs, runRollupsCommand } from './responses/rollups/cli.ts';
import { createApp } from './server/app.ts';
import { connectSharedLimits } from './server/shared-limits.ts';
import { features } from './routes.ts';
import { TokenCache } from './tokens/cache.ts';

const USAGE = `usage: tallyhouse <command>
  serve                      run the HTTP service (npm start)
  migrate                    apply schema/*.sql to the database
  token create|list|revoke   manage API tokens
  seed [--responses N] [--events N] [--org ID] [--surveys S] [--days D]   write synthetic survey responses and events
  ${ROLLUPS_USAGE}

${TOKEN_USAGE}

environment:
${CONFIG_KEYS.map(([k, d, text]) => `  ${k.padEnd(30)} ${d.padEnd(12)} ${text}`).join('\n')}`;

const out = (s: string): void => void process.stdout.write(s + '\n');

async function serve(config: Config, log: Logger): Promise<void> {
  const db = await connectDatabase(config, log, { supervise: true });
  const applied = await migrate(db);
  if (applied.length) log.info({ msg: 'migrations applied', applied });
  const sharedLimits = config.redisUrl ? connectSharedLimits(config.redisUrl, log) : undefined;
  const deps = { config, db, log, tokens: new TokenCache(), sharedLimits };
  const app = createApp(deps, features(deps));
  const port = await app.listen(config.port, config.host);
  log.info({ msg: 'listening', host: config.host, port, engine: db.mode(), maxConnections: app.maxConnections });
  if (!config.clickhouse.url) {
    const demo = await ensureDemo(db, config.dataDir, log);
    out(demoBanner(demo, `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`));
  }

  // SIGTERM (an orchestrator) or SIGINT (Ctrl-C; the engine is in its own process group, so it
  // keeps running until we stop it): stop accepting, answer what is in flight, commit what is
  // queued, then stop the engine. A second signal does not cut the drain short.
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ msg: 'shutting down', signal });
    const force = setTimeout(() => {
      log.error({ msg: 'shutdown did not finish in time; exiting', afterMs: SHUTDOWN_DEADLINE_MS });
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS);
    force.unref();
    const { forced } = await app.close();
    await sharedLimits?.close();
    await db.close();
    log.info({ msg: 'stopped', signal, connectionsCut: forced });
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

/** Past this, the process exits 1 whatever is left (the HTTP grace is 20 s, the engine's stop 15 s at most). */
const SHUTDOWN_DEADLINE_MS = 40_000;

/** One-shot commands: connect (to the running engine if there is one), run, disconnect. */
async function withDatabase(config: Config, log: Logger, fn: (db: Database) => Promise<void>) {
  const db = await connectDatabase(config, log, { supervise: false });
  try {
    await migrate(db);
    await fn(db);
  } finally {
    await db.close();
  }
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === 'help') {
    out(USAGE);
    return command ? 0 : 2;
  }
  const config = loadConfig();
  // One-shot commands keep stderr quiet unless asked; the server logs at the configured level.
  const log = createLogger(command === 'serve' ? config.logLevel : process.env.LOG_LEVEL ? config.logLevel : 'warn');
  switch (command) {
    case 'serve':
      await serve(config, log);
      return -1; // keeps running
    case 'migrate':
      await withDatabase(config, log, async (db) => out(`migrations applied to database ${db.name}`));
      return 0;
    case 'token':
      await withDatabase(config, log, (db) => tokenCommand(db, rest, out));
      return 0;
    case 'seed':
      parseSeedArgs(rest); // a usage error must not start an engine first
      await withDatabase(config, log, (db) => runSeedCommand(db.client(), rest));
      return 0;
    case 'rollups':
      parseRollupsArgs(rest); // a usage error must not start an engine first
      await withDatabase(config, log, (db) => runRollupsCommand(db.client(), rest, out));
      return 0;
    default:
      throw new UsageError(`unknown command "${command}"\n\n${USAGE}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err) => {
    if (err instanceof ConfigError || err instanceof UsageError) {
      process.stderr.write(`tallyhouse: ${err.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`tallyhouse: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
