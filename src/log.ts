import type { LogLevel } from './config.ts';

export type LogEntry = Record<string, unknown>;
export interface Logger {
  debug(entry: LogEntry): void;
  info(entry: LogEntry): void;
  warn(entry: LogEntry): void;
  error(entry: LogEntry): void;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** One JSON line per entry on stderr; stdout stays free for command output (e.g. `token create --json`). */
export function createLogger(level: LogLevel, write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const emit = (lvl: Exclude<LogLevel, 'silent'>) => (entry: LogEntry) => {
    if (RANK[lvl] < RANK[level]) return;
    write(JSON.stringify({ time: new Date().toISOString(), level: lvl, ...entry }) + '\n');
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}
