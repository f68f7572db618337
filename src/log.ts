import { AsyncLocalStorage } from 'node:async_hooks';
import pino, { type DestinationStream } from 'pino';
import type { LogLevel } from './config.ts';

export type LogEntry = Record<string, unknown>;
export interface Logger {
  debug(entry: LogEntry): void;
  info(entry: LogEntry): void;
  warn(entry: LogEntry): void;
  error(entry: LogEntry): void;
}

/**
 * The request a log line belongs to: src/server/request-log.ts runs each request inside it, so
 * every line written while serving it (an error, a failed engine call) carries its `request_id`.
 */
export const requestContext = new AsyncLocalStorage<{ requestId: string }>();

/**
 * One JSON line per entry on stderr (pino); stdout stays free for command output (e.g. `token
 * create --json`). Lines are `{"level":"info","time":"<ISO>","msg":...,...entry}`. Written
 * synchronously, so the last lines before process.exit() are not lost.
 */
export function createLogger(level: LogLevel, destination: DestinationStream = pino.destination({ fd: 2, sync: true })): Logger {
  const logger = pino(
    {
      level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      mixin: () => {
        const store = requestContext.getStore();
        return store ? { request_id: store.requestId } : {};
      },
    },
    destination,
  );
  return {
    debug: (entry) => logger.debug(entry),
    info: (entry) => logger.info(entry),
    warn: (entry) => logger.warn(entry),
    error: (entry) => logger.error(entry),
  };
}
