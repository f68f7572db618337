import { ClickHouseError } from '@clickhouse/client';
import { DomainError, invalid, tooExpensive, unavailable } from '../errors.ts';

// ClickHouse error codes that mean "this one query asked for too much": the client narrows it.
const TOO_EXPENSIVE = new Set(['158' /* TOO_MANY_ROWS */, '241' /* MEMORY_LIMIT_EXCEEDED */, '307' /* TOO_MANY_BYTES */, '396' /* TOO_MANY_ROWS_OR_BYTES */]);
// ...and those that mean "the engine is busy or going away": retry later.
const TRANSIENT = new Set(['159' /* TIMEOUT_EXCEEDED */, '202' /* TOO_MANY_SIMULTANEOUS_QUERIES */, '210' /* NETWORK_ERROR */, '394' /* QUERY_WAS_CANCELLED */]);
// ...and the disk the engine writes to is full: the operator's to fix, the client's to retry.
const NO_SPACE = new Set(['243' /* NOT_ENOUGH_SPACE */]);
const SHARD_UNREACHABLE = new Set(['209' /* SOCKET_TIMEOUT */, '279' /* ALL_CONNECTION_TRIES_FAILED */, '519' /* NO_AVAILABLE_REPLICA */, '1000' /* POCO_EXCEPTION: connection refused */]);
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'UND_ERR_SOCKET', 'EMFILE', 'ENFILE']);

/**
 * Maps a failure talking to ClickHouse to the domain error the client should see, or undefined for
 * anything that is a bug (it then becomes a 500 with no internals).
 */
export function clickHouseError(err: unknown): DomainError | undefined {
  if (err instanceof ClickHouseError) {
    if (TOO_EXPENSIVE.has(err.code)) {
      return tooExpensive('The query needs more rows or memory than one request may use: narrow the range, the survey list or the filters');
    }
    if (TRANSIENT.has(err.code)) return unavailable('The query did not finish in time; retry later or narrow the range', 2);
    if (NO_SPACE.has(err.code)) return unavailable('The store is out of disk space; retry later', 30);
    // Cluster mode: the shard holding this organization is down or unreachable from the node
    // that ran the query. Nothing partial is answered; the client retries.
    if (SHARD_UNREACHABLE.has(err.code) || /NETWORK|CONNECTION|SOCKET|POCO|REPLICA/.test(err.type ?? '')) {
      return unavailable('The storage shard of this organization is unavailable; retry shortly', 2);
    }
    return undefined;
  }
  const e = err as { code?: string; message?: string; name?: string };
  if (e && ((e.code && CONNECTION_CODES.has(e.code)) || /socket hang up|ECONNREFUSED|ECONNRESET|EMFILE|Timeout error|other side closed/i.test(e.message ?? ''))) {
    return unavailable('Storage is unavailable; retry shortly', 1);
  }
  return undefined;
}

/**
 * ClickHouse exception types raised while the input format parses an INSERT's body: the data
 * itself is at fault, and nothing was written yet (see insertEvents). Validation should stop such
 * data first; this is the net under it (GroupCommitter's classify). Anything else (a read cut off,
 * a materialized view failing after the part was written, a schema mismatch) is the store's
 * problem: a 503, never split and retried.
 */
const BAD_INSERT_DATA = /^(CANNOT_PARSE_\w+|INCORRECT_DATA|TOO_LARGE_STRING_SIZE)$/;

/** An `invalid` error naming the engine's reason when an INSERT failed because of its data; else undefined. */
export function insertDataError(err: unknown): DomainError | undefined {
  if (!(err instanceof ClickHouseError) || !BAD_INSERT_DATA.test(err.type ?? '')) return undefined;
  return invalid(`The store could not take these events (${err.type}); nothing of this request was stored`);
}
