/**
 * Conditions on the events' `timestamp` in the column's own type. The column holds milliseconds
 * (DateTime64(3), schema/002) and the API's instants are microseconds: a bound passed as
 * DateTime64(6) makes the engine convert every row's timestamp to microseconds before comparing
 * it, on every row an analysis reads. Each bound here is the millisecond instant that admits
 * exactly the same events: `t >= s` iff `t >= ceil_ms(s)`, `t <= e` iff `t <= floor_ms(e)`,
 * `t < e` iff `t < ceil_ms(e)` (t a whole number of milliseconds).
 */
import type { ParamBag } from '../../clickhouse/sql.ts';
import { formatDbMicros } from '../../time/iso.ts';

export const TIMESTAMP_TYPE = "DateTime64(3, 'UTC')";

const US_PER_MS = 1000n;
/** The first and the last instant (µs) DateTime64(3) holds: 1900-01-01 and 2299-12-31 23:59:59.999. */
const FIRST = BigInt(Date.UTC(1900, 0, 1)) * US_PER_MS;
const LAST = BigInt(Date.UTC(2300, 0, 1)) * US_PER_MS - US_PER_MS;

const floorMs = (us: bigint) => (us >= 0n ? us / US_PER_MS : -((-us + US_PER_MS - 1n) / US_PER_MS)) * US_PER_MS;
const ceilMs = (us: bigint) => -floorMs(-us);

const bound = (bag: ParamBag, us: bigint) => bag.add(formatDbMicros(us), TIMESTAMP_TYPE);

/** `timestamp >= us`. */
export function timestampAtLeast(bag: ParamBag, us: bigint): string {
  const ms = ceilMs(us);
  if (ms > LAST) return 'false';
  return ms <= FIRST ? 'true' : `timestamp >= ${bound(bag, ms)}`;
}

/** `timestamp <= us`. */
export function timestampAtMost(bag: ParamBag, us: bigint): string {
  const ms = floorMs(us);
  if (ms < FIRST) return 'false';
  return ms >= LAST ? 'true' : `timestamp <= ${bound(bag, ms)}`;
}

/** `timestamp < us`. */
export function timestampBefore(bag: ParamBag, us: bigint): string {
  const ms = ceilMs(us);
  if (ms <= FIRST) return 'false';
  return ms > LAST ? 'true' : `timestamp < ${bound(bag, ms)}`;
}
