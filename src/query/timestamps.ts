/**
 * ISO 8601 timestamps with microseconds, without JS Date rounding.
 *
 * JS Date keeps milliseconds only, so the fraction is carried as text: Date handles the whole
 * seconds (and the offset), the fraction digits are padded to six and copied as they are.
 * Nanosecond inputs (7..9 digits) are truncated to microseconds, the precision of the columns.
 */

export interface Micros {
  /** Whole seconds since the epoch, UTC. */
  readonly seconds: number;
  /** Six fraction digits, '000000'..'999999'. */
  readonly fraction: string;
}

const ISO_8601 =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?)?$/;

// DateTime64 stores 1900-01-01 .. 2299-12-31; outside that ClickHouse would clamp silently.
const MIN_SECONDS = Date.UTC(1900, 0, 1) / 1000;
const MAX_SECONDS = Date.UTC(2300, 0, 1) / 1000 - 1;

/**
 * Parses `2024-01-02T03:04:05.123456Z`, `...+02:00`, `2024-01-02 03:04:05`, or a date alone
 * (midnight). A time without an offset is read as UTC. Returns undefined when it is not a real
 * instant (Feb 30, hour 24, out of the storable years).
 */
export function parseIsoMicros(text: string): Micros | undefined {
  const m = ISO_8601.exec(text);
  if (!m) return undefined;
  const [, ys, mos, ds, hs = '0', mis = '0', ss = '0', frac = '', offset = 'Z'] = m;
  const y = Number(ys), mo = Number(mos), d = Number(ds), h = Number(hs), mi = Number(mis), s = Number(ss);
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return undefined;
  const dayCheck = new Date(Date.UTC(y, mo - 1, d));
  if (dayCheck.getUTCDate() !== d || dayCheck.getUTCMonth() !== mo - 1) return undefined;
  let offsetMinutes = 0;
  if (offset !== 'Z' && offset !== 'z') {
    const sign = offset[0] === '-' ? -1 : 1;
    const digits = offset.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2)), om = Number(digits.slice(2) || '0');
    if (oh > 23 || om > 59) return undefined;
    offsetMinutes = sign * (oh * 60 + om);
  }
  // Date.UTC treats years 0..99 as 19xx; setUTCFullYear avoids that (the range check rejects them anyway).
  const base = new Date(0);
  base.setUTCFullYear(y, mo - 1, d);
  base.setUTCHours(h, mi, s, 0);
  const seconds = base.getTime() / 1000 - offsetMinutes * 60;
  if (seconds < MIN_SECONDS || seconds > MAX_SECONDS) return undefined;
  return { seconds, fraction: frac.slice(0, 6).padEnd(6, '0') };
}

function wholeSeconds(seconds: number): string {
  // toISOString -> 'YYYY-MM-DDTHH:MM:SS.000Z'; the milliseconds are always 000 here.
  return new Date(seconds * 1000).toISOString().slice(0, 19);
}

/** `2024-01-02T03:04:05.123456Z`: the form the API returns. */
export function formatApi(t: Micros): string {
  return `${wholeSeconds(t.seconds)}.${t.fraction}Z`;
}

/** `2024-01-02 03:04:05.123456`: the form DateTime64(6, 'UTC') columns and parameters take. */
export function formatDb(t: Micros): string {
  return `${wholeSeconds(t.seconds).replace('T', ' ')}.${t.fraction}`;
}

/** Inverse of formatDb for values read back from ClickHouse ('YYYY-MM-DD HH:MM:SS.ffffff'). */
export function dbToApi(db: string): string {
  return `${db.slice(0, 10)}T${db.slice(11, 19)}.${(db.slice(20) || '').padEnd(6, '0').slice(0, 6)}Z`;
}

/** Orders two instants; negative when a < b. */
export function compareMicros(a: Micros, b: Micros): number {
  return a.seconds !== b.seconds ? a.seconds - b.seconds : a.fraction < b.fraction ? -1 : a.fraction > b.fraction ? 1 : 0;
}
