/**
 * The one ISO 8601 parser and the one family of timestamp formatters of the service: event
 * timestamps, release dates and list windows, survey-response timestamps, filters, ranges and
 * histogram edges all go through here.
 *
 * Parsing is strict about the calendar: "2023-02-29" or "2024-02-30" is no date (never rolled over
 * to March as `Date.parse` does), nor is hour 24 or an offset of +24:00. The instant is carried to
 * the microsecond without JS Date rounding: Date only handles the whole seconds (and the offset),
 * the fraction digits are kept as text, padded to six (7..9 digits are truncated to microseconds,
 * the precision of the DateTime64(6) columns).
 */

/**
 * ISO 8601 calendar date, optionally followed by a time (`T`, `t` or a space), optional seconds and
 * fraction (`.` or `,`, up to 9 digits) and an optional zone (`Z`, `±HH`, `±HHMM`, `±HH:MM`). Days
 * are checked against their month, leap years included. A value without a zone is UTC.
 * No flags: the source is the JSON Schema `pattern` of event timestamps.
 */
const ISO_DATE =
  '(?:\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|02-(?:0[1-9]|1\\d|2[0-8]))' +
  '|(?:\\d{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29)';
const ISO_TIME = '(?:[Tt ](?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:[.,]\\d{1,9})?)?(?:[Zz]|[+-](?:[01]\\d|2[0-3])(?::?[0-5]\\d)?)?)?';
export const ISO_8601_PATTERN = new RegExp(`^${ISO_DATE}${ISO_TIME}$`);

/** Same grammar, `[T ]hh:mm` and an explicit zone required: "ISO 8601 with an offset" (releases). */
export const ISO_8601_WITH_OFFSET_PATTERN = new RegExp(
  `^${ISO_DATE}[Tt ](?:[01]\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:[.,]\\d{1,9})?)?(?:[Zz]|[+-](?:[01]\\d|2[0-3])(?::?[0-5]\\d)?)$`,
);

// Only applied to strings that ISO_8601_PATTERN accepted, so every field is known to be in range.
const ISO_PARTS = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:[Zz]|([+-])(\d{2})(?::?(\d{2}))?)?)?$/;

/** An instant: whole seconds since the epoch (UTC) and six fraction digits. */
export interface Micros {
  readonly seconds: number;
  /** '000000'..'999999'. */
  readonly fraction: string;
}

// DateTime64 stores 1900-01-01 .. 2299-12-31; outside that ClickHouse would clamp silently.
const MIN_SECONDS = Date.UTC(1900, 0, 1) / 1000;
const MAX_SECONDS = Date.UTC(2300, 0, 1) / 1000 - 1;

/** Whether ClickHouse's DateTime64 columns can hold `t` (years 1900..2299). */
export const isStorable = (t: Micros): boolean => t.seconds >= MIN_SECONDS && t.seconds <= MAX_SECONDS;

/**
 * THE parser: `2024-01-02T03:04:05.123456Z`, `...+02:00`, `2024-01-02 03:04:05` (the engine's
 * form), or a date alone (midnight UTC). undefined when it is not a real instant.
 * `requireOffset`: a time and an explicit zone are required.
 */
export function parseIso(text: string, opts: { requireOffset?: boolean } = {}): Micros | undefined {
  if (!(opts.requireOffset ? ISO_8601_WITH_OFFSET_PATTERN : ISO_8601_PATTERN).test(text)) return undefined;
  const m = ISO_PARTS.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac = '', sign, oh = '0', om = '0'] = m;
  const base = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0..99 to 1900..1999.
  base.setUTCFullYear(Number(y), Number(mo) - 1, Number(d));
  base.setUTCHours(Number(h), Number(mi), Number(s), 0);
  const offsetMinutes = sign ? (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om)) : 0;
  return { seconds: base.getTime() / 1000 - offsetMinutes * 60, fraction: frac.slice(0, 6).padEnd(6, '0') };
}

/** An instant a DateTime64(6) column can hold (survey responses, filters, ranges), or undefined. */
export function parseIsoMicros(text: string): Micros | undefined {
  const t = parseIso(text);
  return t && isStorable(t) ? t : undefined;
}

/** Epoch milliseconds (fraction truncated), any year (event timestamps), or undefined. */
export function parseIsoMillis(text: string): number | undefined {
  const t = parseIso(text);
  return t ? toMillis(t) : undefined;
}

/** µs since the epoch (histogram arithmetic), or null; the storable range applies. */
export function parseInstantMicros(text: string): bigint | null {
  const t = parseIsoMicros(text);
  return t ? toBigMicros(t) : null;
}

// --- conversions ---------------------------------------------------------------------------------

export const toBigMicros = (t: Micros): bigint => BigInt(t.seconds) * 1_000_000n + BigInt(t.fraction);

export function fromBigMicros(us: bigint): Micros {
  const q = us / 1_000_000n;
  const seconds = us % 1_000_000n !== 0n && us < 0n ? q - 1n : q; // floor
  return { seconds: Number(seconds), fraction: (us - seconds * 1_000_000n).toString().padStart(6, '0') };
}

/** Milliseconds, the fraction truncated (floor, also before 1970). */
export const toMillis = (t: Micros): number => t.seconds * 1000 + Number(t.fraction.slice(0, 3));

export const fromMillis = (ms: number): Micros => {
  const seconds = Math.floor(ms / 1000);
  return { seconds, fraction: String(ms - seconds * 1000).padStart(3, '0') + '000' };
};

/** Orders two instants; negative when a < b. */
export function compareMicros(a: Micros, b: Micros): number {
  return a.seconds !== b.seconds ? a.seconds - b.seconds : a.fraction < b.fraction ? -1 : a.fraction > b.fraction ? 1 : 0;
}

// --- the formatter family: API (ISO, UTC, Z) and engine (DateTime64 text) forms -------------------

function wholeSeconds(seconds: number): string {
  // toISOString -> 'YYYY-MM-DDTHH:MM:SS.000Z'; the milliseconds are always 000 here.
  return new Date(seconds * 1000).toISOString().slice(0, 19);
}

/** `2024-01-02T03:04:05.123456Z`: the API's form of survey timestamps. */
export function formatApi(t: Micros): string {
  return `${wholeSeconds(t.seconds)}.${t.fraction}Z`;
}

/** `2024-01-02T03:04:05.123Z`: the API's form of release timestamps (milliseconds). */
export function formatApiMillis(t: Micros): string {
  return `${wholeSeconds(t.seconds)}.${t.fraction.slice(0, 3)}Z`;
}

/** `2024-01-02 03:04:05.123456`: the text DateTime64(6, 'UTC') columns and parameters take. */
export function formatDb(t: Micros): string {
  return `${wholeSeconds(t.seconds).replace('T', ' ')}.${t.fraction}`;
}

/** `2024-01-02 03:04:05.123`: the text DateTime64(3, 'UTC') columns take (events, releases). */
export function formatDbMillis(t: Micros): string {
  return `${wholeSeconds(t.seconds).replace('T', ' ')}.${t.fraction.slice(0, 3)}`;
}

/**
 * A JS Date as DateTime64(3, 'UTC') text, `2024-01-02 03:04:05.123` (formatDbMillis of the same
 * instant; straight from toISOString, since it runs twice per ingested event).
 */
export function formatDbDate(date: Date): string {
  const iso = date.toISOString(); // 'YYYY-MM-DDThh:mm:ss.mmmZ'
  return iso.slice(0, 10) + ' ' + iso.slice(11, 23);
}

/** µs -> `2024-01-01T00:00:00.000000Z`. */
export const formatMicros = (us: bigint): string => formatApi(fromBigMicros(us));

/** µs -> `2024-01-01 00:00:00.000000`. */
export const formatDbMicros = (us: bigint): string => formatDb(fromBigMicros(us));

/** Inverse of formatDb for values read back from ClickHouse ('YYYY-MM-DD HH:MM:SS[.ffffff]'). */
export function dbToApi(db: string): string {
  return `${db.slice(0, 10)}T${db.slice(11, 19)}.${(db.slice(20) || '').padEnd(6, '0').slice(0, 6)}Z`;
}
