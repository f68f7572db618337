import { readFileSync } from 'node:fs';
import { checkListen, listenError, warmUp } from './cli/startup.ts';
import { parseArgs, UsageError, type Options, type ParsedArgs } from './cli/args.ts';
import { TOKEN_CREATE, TOKEN_LIST, TOKEN_REVOKE, tokenCreate, tokenList, tokenRevoke } from './cli/token.ts';
import type { Database } from './clickhouse/connection.ts';
import { CONFIG_KEYS, ConfigError, loadConfig, type Config } from './config.ts';
import { createLogger, type Logger } from './log.ts';
import { SEED_OPTIONS, SEED_USAGE, parseSeedArgs } from './seed/args.ts';
import { ROLLUPS_REBUILD, rollupsOrg, rollupsRebuild } from './responses/rollups/cli.ts';

// The engine client, the HTTP app and the features load only when a command needs them: `--help`,
// `--version` and a usage error answer without loading them.
const engine = () => Promise.all([import('./clickhouse/connection.ts'), import('./clickhouse/migrations.ts')]);

const out = (s: string): void => void process.stdout.write(s + '\n');

async function serve(config: Config, log: Logger): Promise<void> {
  const [[, { migrate }], { createApp }, { features }, { TokenCache }, { ensureDemo, demoBanner, plainBanner }] = await Promise.all([
    engine(),
    import('./server/app.ts'),
    import('./routes.ts'),
    import('./tokens/cache.ts'),
    import('./cli/demo.ts'),
  ]);
  const { connectSharedLimits } = await import('./server/shared-limits.ts');
  // Port and host first: a bad one is known in a second, not after the engine and the demo data.
  await checkListen(config.host, config.port);
  const db = await openDatabase(config, log, true);
  const applied = await migrate(db);
  if (applied.length) log.info({ msg: 'migrations applied', applied });
  const sharedLimits = config.redisUrl ? connectSharedLimits(config.redisUrl, log) : undefined;
  // The request cache's deletion generation: shared by every instance through Redis, else this process's.
  const { useDeletionGenerations, deletionGenerationWarning } = await import('./query/request-cache.ts');
  if (sharedLimits) useDeletionGenerations(sharedLimits.generations);
  const generationWarning = deletionGenerationWarning(db.mode(), sharedLimits !== undefined);
  if (generationWarning) log.warn({ msg: generationWarning });
  const deps = { config, db, log, tokens: new TokenCache(config.tokenCacheTtlMs, config.tokenMaxConcurrentLookups), sharedLimits };
  const app = createApp(deps, features(deps));
  const port = await app.listen(config.port, config.host).catch((err) => {
    throw listenError(err, config.host, config.port);
  });
  log.info({ msg: 'listening', host: config.host, port, engine: db.mode(), maxConnections: app.maxConnections });
  const baseUrl = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  await warmUp(db, log, baseUrl);
  if (!config.clickhouse.url && config.demo) out(demoBanner(await ensureDemo(db, config.dataDir, log), baseUrl));
  else out(plainBanner(baseUrl, db.mode()));

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

/** CLICKHOUSE_URL, or the embedded engine for DATA_DIR; a failure is one StartupError line. */
async function openDatabase(config: Config, log: Logger, supervise: boolean): Promise<Database> {
  const [[{ connectDatabase }], { checkClickHouse, checkDataDir, checkEmbeddedLayout, checkEngineLibrary }] = await Promise.all([engine(), import('./cli/startup.ts')]);
  if (config.clickhouse.url) return checkClickHouse(config, () => connectDatabase(config, log, { supervise }));
  checkDataDir(config.dataDir);
  checkEmbeddedLayout(config.dataDir, config.embeddedShards);
  checkEngineLibrary();
  return connectDatabase(config, log, { supervise });
}

/** One-shot commands: connect (to the running engine if there is one), run, disconnect. */
async function withDatabase(config: Config, log: Logger, fn: (db: Database) => Promise<void>) {
  const [, { migrate }] = await engine();
  const db = await openDatabase(config, log, false);
  try {
    await migrate(db);
    await fn(db);
  } finally {
    await db.close();
  }
}

/** A one-shot command's body: the config is read only now, after the arguments were accepted. */
const oneShot =
  (fn: (db: Database, args: ParsedArgs, argv: string[]) => Promise<void>) =>
  async (args: ParsedArgs, argv: string[]): Promise<void> => {
    const config = loadConfig();
    // One-shot commands keep stderr quiet unless asked; the server logs at the configured level.
    const log = createLogger(process.env.LOG_LEVEL ? config.logLevel : 'warn');
    await withDatabase(config, log, (db) => fn(db, args, argv));
  };

/**
 * The commands. Adding one is adding an entry: its name as typed (one or two words), its options
 * (node:util parseArgs, strict), its usage text and what it runs. `--help`/`-h` prints the usage
 * and exits 0 before anything runs; a bad argument exits 2 with the usage.
 */
interface Command {
  name: string;
  summary: string;
  usage: string;
  options: Options;
  /** How many positional arguments it takes (default 0). */
  positionals?: number;
  /** Resolves when done; 'running' for the server, which keeps the process alive. */
  run(args: ParsedArgs, argv: string[]): Promise<void | 'running'>;
}

const COMMANDS: Command[] = [
  {
    name: 'serve',
    summary: 'run the HTTP service (npm start)',
    usage: `usage: tallyhouse serve
Runs the HTTP service, configured by the environment (below). Without CLICKHOUSE_URL it starts an
embedded ClickHouse engine in DATA_DIR and, on first start, a demo organization with tokens and
survey responses (TALLYHOUSE_DEMO=0: none). Stops cleanly on SIGTERM or Ctrl-C.`,
    options: {},
    run: async () => {
      const config = loadConfig();
      await serve(config, createLogger(config.logLevel));
      return 'running';
    },
  },
  {
    name: 'migrate',
    summary: 'apply schema/*.sql to the database',
    usage: 'usage: tallyhouse migrate\nApplies the schema migrations not applied yet (serve does it too).',
    options: {},
    run: oneShot(async (db) => out(`migrations applied to database ${db.name}`)),
  },
  { name: 'token create', summary: 'mint an API token', ...TOKEN_CREATE, run: oneShot((db, args) => tokenCreate(db, args, out)) },
  { name: 'token list', summary: 'list API tokens (names, scopes, never the tokens)', ...TOKEN_LIST, run: oneShot((db, args) => tokenList(db, args, out)) },
  {
    name: 'rollups rebuild',
    summary: 'recompute the survey rollups (recovery)',
    ...ROLLUPS_REBUILD,
    run: async (args, argv) => {
      rollupsOrg(args); // checked before an engine starts
      await oneShot((db) => rollupsRebuild(db.client(), args, out))(args, argv);
    },
  },
  { name: 'token revoke', summary: 'revoke an API token by id', ...TOKEN_REVOKE, positionals: 1, run: oneShot((db, args) => tokenRevoke(db, args, out)) },
  {
    name: 'seed',
    summary: 'write synthetic survey responses and/or events',
    usage: SEED_USAGE,
    options: SEED_OPTIONS,
    run: async (_args, argv) => {
      parseSeedArgs(argv); // every value checked before an engine starts
      const { runSeedCommand } = await import('./seed/cli.ts');
      await oneShot((db) => runSeedCommand(db.client(), argv, undefined, db))(_args, argv);
    },
  },
];

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const USAGE = `usage: tallyhouse <command> [options]     (tallyhouse <command> --help for its options)

commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(16)} ${c.summary}`).join('\n')}

options:
  -h, --help       this help
  -V, --version    the version

environment:
${CONFIG_KEYS.map(([k, d, text]) => `  ${k.padEnd(30)} ${d.padEnd(12)} ${text}`).join('\n')}`;

/** The usage of a group of commands (`tallyhouse token`). */
const groupUsage = (group: string) =>
  COMMANDS.filter((c) => c.name.startsWith(`${group} `))
    .map((c) => c.usage)
    .join('\n\n');

async function main(argv: string[]): Promise<number | 'running'> {
  const [first, second] = argv;
  if (first === undefined) throw new UsageError(USAGE);
  if (first === '--help' || first === '-h' || first === 'help') {
    out(USAGE);
    return 0;
  }
  if (first === '--version' || first === '-V') {
    out(VERSION);
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === `${first} ${second}`) ?? COMMANDS.find((c) => c.name === first);
  if (!command) {
    const group = groupUsage(first);
    if (group && (second === '--help' || second === '-h')) {
      out(group);
      return 0;
    }
    if (group) throw new UsageError(`${second === undefined ? `${first} needs a subcommand` : `unknown ${first} subcommand ${JSON.stringify(second)}`}\n\n${group}`);
    throw new UsageError(`unknown command ${JSON.stringify(first)}\n\n${USAGE}`);
  }
  const rest = argv.slice(command.name.split(' ').length);
  const args = parseArgs(rest, command.options, command.usage, command.positionals ?? 0);
  if (args.values.help) {
    out(command.usage);
    return 0;
  }
  return (await command.run(args, rest)) ?? 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 'running') process.exit(code);
  },
  (err) => {
    if (err instanceof ConfigError || err instanceof UsageError) {
      process.stderr.write(`tallyhouse: ${err.message}\n`);
      process.exit(2);
    }
    // One line: what failed and which setting to change; the stack only when asked for.
    const debug = process.env.LOG_LEVEL === 'debug';
    process.stderr.write(`tallyhouse: ${debug ? (err?.stack ?? err) : String(err?.message ?? err).split('\n')[0]}\n`);
    process.exit(1);
  },
);
