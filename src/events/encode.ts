/**
 * POST /1.0/event in one pass: the parsed JSON body is checked and written as RowBinary rows of
 * `events` in the same walk over each item. Every string is encoded once, straight into the row
 * buffer (the properties' JSON text too: its byte length is the size check), the message key is
 * computed once as 16 bytes, ids and times are binary, a timestamp is parsed once.
 *
 * The valibot schema (schema.ts) stays the contract: the source of every error message and of the
 * OpenAPI document. The walk accepts only what it can tell the schema accepts; anything else
 * (invalid, or valid in a way the walk does not vouch for) goes to `parseEventBatch`, which answers the 400 word for word, or returns the schema's output,
 * which the same walk then encodes without checks. A property test (test/unit/events-encode)
 * holds the two to agreeing: the walk accepts exactly the batches the schema accepts, and its
 * rows are the rows toEventRows makes of the schema's output.
 */
import { randomFillSync } from 'node:crypto';
import { md5 } from 'js-md5';
import { parse as parseUuid, stringify as stringifyUuid } from 'uuid';
import { claimKey, type ClaimKey } from '../claims/claims.ts';
import { charCount } from '../chars.ts';
import { RowBinaryWriter } from '../clickhouse/rowbinary.ts';
import { parseIsoMillis } from '../time/iso.ts';
import { groupIdBytes, MAX_EVENT_AGE_MS, userNameId } from './rows.ts';
import { COPILOT_EVENT_NAMES, LOCALE_PATTERN, MAX_CHARS, MAX_EVENTS_PER_REQUEST, MAX_PROPERTIES_BYTES, parseEventBatch, TIMEZONE_PATTERN, type ParsedEvent } from './schema.ts';

/** The claim key of a message id: MD5 of `org_id:message_id` (schema/060's DEFAULT computes the same in SQL). */
export function messageKey(orgId: string, messageId: string): ClaimKey {
  return claimKey(orgId.toLowerCase(), messageId);
}

/**
 * The rows of every request are written by this one writer, each request's body a piece of its
 * current slab (RowBinaryWriter.take: no copy): the walk never awaits, so no two requests write at
 * once, and a request the walk gives up on is dropped by the next one's reset.
 */
const scratch = new RowBinaryWriter(1 << 20);

/**
 * One request's rows as the group committer carries them: the RowBinary rows and, when some row
 * has a message id, each row's key (16 bytes each in one buffer, 16 zero bytes for a row without
 * a message id, as `events.message_key` holds it), event id and offset in the body. After its flush,
 * `duplicates` says how many of its rows were not stored because their message id already was.
 * Nothing of the request but the chunk outlives the handler (a request waits up to an INSERT's
 * duration for its commit, and a parsed body referenced meanwhile would be copied by every young
 * garbage collection): the body is a Buffer, outside the JS heap.
 */
export class EventChunk {
  duplicates = 0;
  constructor(
    readonly orgId: string,
    readonly body: Buffer,
    readonly rows: number,
    /** Per row, its message key (16 bytes at 16 x row; zeros: none); undefined when no row has a message id. */
    readonly keys?: Buffer,
    /** With `keys`: the event ids, 16 bytes each. */
    readonly eventIds?: Buffer,
    /** Where each row starts in `body`, and its end. */
    readonly offsets?: Uint32Array,
    /** The earliest and the latest event time of its rows (epoch ms). */
    readonly timeRange?: readonly [number, number],
    /** Per row, its known user's id as latin1 (the key of src/events/user-numbers.ts); undefined: anonymous. */
    readonly users?: readonly (string | undefined)[],
  ) {}

  /** A row's known user (its 16 id bytes as latin1, the key of src/events/user-numbers.ts), or undefined when anonymous. */
  userKey(row: number): string | undefined {
    return this.users?.[row];
  }

  /** Writes a row's `user_num` (its last 4 bytes, EVENT_COLUMNS). */
  setUserNumber(row: number, num: number): void {
    this.body.writeUInt32LE(num, this.offsets![row + 1] - 4);
  }

  /** Whether a row has a message key (with `keys`). */
  hasKey(row: number): boolean {
    const k = this.keys!;
    for (let i = 16 * row; i < 16 * row + 16; i++) if (k[i] !== 0) return true;
    return false;
  }

  /** The message key of a row (a copy), or undefined without one. */
  key(row: number): ClaimKey | undefined {
    return this.keys && this.hasKey(row) ? Buffer.from(this.keys.subarray(16 * row, 16 * row + 16)) : undefined;
  }

  /** The event id of a row (with `keys`). */
  eventId(row: number): string {
    return stringifyUuid(this.eventIds!, 16 * row);
  }

  /** The body without the rows at these (ascending) positions. */
  without(positions: readonly number[]): Buffer {
    const kept: Buffer[] = [];
    let start = 0;
    for (const row of positions) {
      if (this.offsets![row] > start) kept.push(this.body.subarray(start, this.offsets![row]));
      start = this.offsets![row + 1];
    }
    if (start < this.body.length) kept.push(this.body.subarray(start));
    return Buffer.concat(kept);
  }
}

/** Events the schema accepted (its output) as a chunk. */
export function encodeEventChunk(orgId: string, events: readonly ParsedEvent[], receivedAt: Date): EventChunk {
  return encodeItems(events, orgId, receivedAt, false);
}

/** The INSERT's column list, in the order each row is written. */
export const EVENT_COLUMNS = [
  'org_id',
  'type',
  'seq',
  'event_id',
  'received_at',
  'timestamp',
  'user_alias',
  'anonymous',
  'user_id',
  'message_id',
  'message_key',
  'properties',
  'property_map',
  'context_locale',
  'context_timezone',
  'event_name',
  'group_id',
  'group_type',
  'group_name',
  'url',
  'screen_name',
  'agent_id',
  'conversation_id',
  'copilot_session_id',
  'prompt',
  'response',
  'rating',
  'rating_scale',
  // Written as 0 here; the flush writes the known user's number (src/events/user-numbers.ts).
  'user_num',
] as const;

const NO_KEY = Buffer.alloc(16);
const NO_USER_NUM = Buffer.alloc(4);
const COPILOT_NAMES: ReadonlySet<string> = new Set(COPILOT_EVENT_NAMES);

/** A UUID's RFC 9562 bytes in RowBinary's order (each 8-byte half little endian). */
function uuidRowBytes(b: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(16);
  for (let i = 0; i < 8; i++) {
    out[i] = b[7 - i];
    out[8 + i] = b[15 - i];
  }
  return out;
}

/** Thrown inside the walk when an item is not plainly valid: the schema decides. */
class NotPlain extends Error {}
const notPlain = new NotPlain();

/**
 * A request's events as its chunk (what the group committer carries), or the schema's 400.
 * `receivedAt` is the reception time every row gets; `randomIds` fills event ids and anonymous
 * user ids (tests make it deterministic).
 */
export function encodeEventBatch(raw: unknown, orgId: string, receivedAt: Date, randomIds: (b: Buffer) => void = randomFillSync): EventChunk {
  // Else the schema's 400; or, for a valid batch the walk would not vouch for, its output.
  return fastEncode(raw, orgId, receivedAt, randomIds) ?? encodeItems(parseEventBatch(raw), orgId, receivedAt, false, randomIds);
}

/** The walk with its checks: the chunk, or undefined when the schema must decide. */
export function fastEncode(raw: unknown, orgId: string, receivedAt: Date, randomIds: (b: Buffer) => void = randomFillSync): EventChunk | undefined {
  if (!Array.isArray(raw) || raw.length < 1 || raw.length > MAX_EVENTS_PER_REQUEST) return undefined;
  try {
    return encodeItems(raw, orgId, receivedAt, true, randomIds);
  } catch (err) {
    if (err instanceof NotPlain) return undefined;
    throw err;
  }
}

/**
 * The rows of already-validated events (the schema's output, or anything that passes `check`).
 * With `check`, throws NotPlain at the first item the schema might refuse.
 */
export function encodeItems(items: readonly unknown[], orgId: string, receivedAt: Date, check: boolean, randomIds: (b: Buffer) => void = randomFillSync): EventChunk {
  const n = items.length;
  // The organization's UUID as RowBinary writes it (RowBinaryWriter.uuidBytes), once a request.
  const org = uuidRowBytes(parseUuid(orgId));
  const received = receivedAt.getTime();
  // Row i's event id at 16 x i, its user id if anonymous at 16 x (n + i): the first half is the
  // chunk's event ids as they are.
  const ids = Buffer.allocUnsafe(32 * n);
  randomIds(ids);
  for (let i = 0; i < 2 * n; i++) {
    // RFC 9562 version 4 (random) and variant bits.
    ids[16 * i + 6] = (ids[16 * i + 6] & 0x0f) | 0x40;
    ids[16 * i + 8] = (ids[16 * i + 8] & 0x3f) | 0x80;
  }
  const w = scratch;
  w.reset();
  const keyPrefix = orgId.toLowerCase() + ':';
  const offsets = new Uint32Array(n + 1);
  let keys: Buffer | undefined;
  const users = new Array<string | undefined>(n).fill(undefined);
  let earliest = Infinity;
  let latest = -Infinity;

  for (let seq = 0; seq < n; seq++) {
    offsets[seq] = w.length;
    const item = items[seq] as Record<string, unknown>;
    if (check && (item === null || typeof item !== 'object' || Array.isArray(item))) throw notPlain;
    const type = item.type;
    if (type !== 'identify' && type !== 'track' && type !== 'group.assign' && type !== 'group.unassign' && type !== 'page' && type !== 'screen' && type !== 'copilot') {
      throw notPlain;
    }
    w.bytes(org);
    w.string(type);
    w.uint16(seq);
    w.uuidBytes(ids, 16 * seq);
    w.dateTime64ms(received);
    const time = eventTime(item.timestamp, received, check);
    w.dateTime64ms(time);
    if (time < earliest) earliest = time;
    if (time > latest) latest = time;

    const alias = optional(item.user_alias, MAX_CHARS.user_alias, check);
    w.string(alias);
    w.uint8(alias === '' ? 1 : 0);
    if (alias === '') w.uuidBytes(ids, 16 * (n + seq));
    else {
      const user = userNameId(orgId, alias);
      w.uuidBytes(user.bytes);
      users[seq] = user.key;
    }

    const messageId = optional(item.message_id, MAX_CHARS.message_id, check);
    w.string(messageId);
    if (messageId === '') w.bytes(NO_KEY);
    else {
      // messageKey(orgId, messageId), its prefix lower-cased once per request; the JS digest
      // writes into the chunk's key buffer with no per-key object of the crypto binding.
      const digest = md5.array(keyPrefix + messageId);
      keys ??= Buffer.alloc(16 * n);
      const at = 16 * seq;
      for (let i = 0; i < 16; i++) keys[at + i] = digest[i];
      w.bytes(keys, at, at + 16);
    }

    const properties = item.properties as Record<string, unknown> | null | undefined;
    if (properties == null) {
      w.string('{}');
      w.zeros(1);
    } else {
      if (check && (typeof properties !== 'object' || Array.isArray(properties))) throw notPlain;
      writeProperties(w, properties, check);
    }

    const context = item.context as Record<string, unknown> | null | undefined;
    if (context == null) w.zeros(2); else {
      // An array is an object to the schema too (its locale and timezone are absent).
      if (check && typeof context !== 'object') throw notPlain;
      const locale = optional(context.locale, MAX_CHARS.locale, check, true);
      const timezone = optional(context.timezone, MAX_CHARS.timezone, check, true);
      // The schema's form checks (one precompiled regex each; "" passes both).
      if (check && (!LOCALE_PATTERN.test(locale) || !TIMEZONE_PATTERN.test(timezone))) throw notPlain;
      w.string(locale);
      w.string(timezone);
    }

    switch (type) {
      case 'identify':
        w.empty();
        w.zeros(16);
        empties(w, 2);
        empties(w, 9);
        break;
      case 'track':
        w.string(required(item.event_name, MAX_CHARS.event_name, check));
        w.zeros(16);
        empties(w, 11);
        break;
      case 'group.assign':
      case 'group.unassign': {
        w.empty();
        const groupType = optional(item.group_type, MAX_CHARS.group_type, check);
        const groupName = required(item.group_name, MAX_CHARS.group_name, check);
        w.uuidBytes(groupIdBytes(orgId, groupType, groupName));
        w.string(groupType);
        w.string(groupName);
        empties(w, 9);
        break;
      }
      case 'page':
        w.empty();
        w.zeros(16);
        empties(w, 2);
        w.string(required(item.url, MAX_CHARS.url, check));
        empties(w, 8);
        break;
      case 'screen':
        w.empty();
        w.zeros(16);
        empties(w, 3);
        w.string(required(item.screen_name, MAX_CHARS.screen_name, check));
        empties(w, 7);
        break;
      case 'copilot': {
        const name = item.event_name;
        if (typeof name !== 'string' || !COPILOT_NAMES.has(name)) throw notPlain;
        w.string(name);
        w.zeros(16);
        empties(w, 4);
        w.string(required(item.agent_id, MAX_CHARS.agent_id, check));
        const conversation = name !== 'service_copilot_conversion';
        w.string(conversation ? required(item.conversation_id, MAX_CHARS.conversation_id, check) : optional(item.conversation_id, MAX_CHARS.conversation_id, check));
        w.string(conversation ? required(item.copilot_session_id, MAX_CHARS.copilot_session_id, check) : optional(item.copilot_session_id, MAX_CHARS.copilot_session_id, check));
        w.string(name === 'service_copilot_user_prompt' ? required(item.prompt, MAX_CHARS.prompt, check) : optional(item.prompt, MAX_CHARS.prompt, check));
        w.string(name === 'service_copilot_response' ? required(item.response, MAX_CHARS.response, check) : optional(item.response, MAX_CHARS.response, check));
        const satisfaction = name === 'service_copilot_satisfaction';
        w.string(satisfaction ? required(item.rating, MAX_CHARS.rating, check) : optional(item.rating, MAX_CHARS.rating, check));
        w.string(satisfaction ? required(item.rating_scale, MAX_CHARS.rating_scale, check) : optional(item.rating_scale, MAX_CHARS.rating_scale, check));
        break;
      }
    }
    w.bytes(NO_USER_NUM);
  }
  offsets[n] = w.length;
  const body = w.take();
  if (!keys) return new EventChunk(orgId, body, n, undefined, undefined, offsets, [earliest, latest], users);
  return new EventChunk(orgId, body, n, keys, ids.subarray(0, 16 * n), offsets, [earliest, latest], users);
}

/**
 * `properties` (the JSON text, its UTF-8 length the size check) and `property_map`
 * (Map(String, String): the number of entries, then each key and value) of rows.ts
 * propertyMapValue: the typed values the reads filter and group on, computed here once rather than
 * by the engine from the JSON text at every INSERT. An object or array value is stringified once,
 * for both, and a number's text is made once. The text is JSON.stringify's (keys in Object.keys
 * order, undefined values left out): written here byte by byte when every key and string is
 * printable ASCII with nothing to escape (its length is then known before it is written: no
 * string is built), else built from the values' texts, or by one JSON.stringify call.
 */
function writeProperties(w: RowBinaryWriter, properties: Record<string, unknown>, check: boolean): void {
  // Every loop below is a for-in: inside one, V8 reads `properties[key]` through the object's
  // enum cache (a field by index), where a loop over Object.keys would look each key up in a
  // megamorphic cache (the items' shapes are many), and no array of keys is made. A JSON.parse
  // object's for-in order is Object.keys order: its own keys (the prototype, Object.prototype,
  // has no enumerable property).
  let count = 0;
  let entries = 0;
  // The JSON text of a number or object value, by key index.
  let texts: string[] | undefined;
  let nested = false;
  // The text's length when it is written as it is (-1: it is not: a value JSON.stringify leaves
  // out): the braces, the commas, and per key its quotes, colon and value.
  let length = 1;
  for (const key in properties) {
    const value = properties[key];
    length += key.length + 4;
    switch (typeof value) {
      case 'string':
        entries++;
        length += value.length + 2;
        break;
      case 'number': {
        entries++;
        // JSON.stringify's text of a number: a finite one's is its String (JSON has no others).
        (texts ??= [])[count] = Number.isFinite(value) ? String(value) : 'null';
        length += texts[count].length;
        break;
      }
      case 'boolean':
        entries++;
        length += value ? 4 : 5;
        break;
      case 'object':
        if (value === null) length += 4;
        else {
          entries++;
          nested = true;
          (texts ??= [])[count] = JSON.stringify(value);
          length += texts[count].length;
        }
        break;
      default:
        length = -1;
    }
    if (length < 0) break;
    count++;
  }
  if (count === 0 && length > 0) length = 2;
  if (length < 0 || !writePlainText(w, properties, texts, length)) {
    let text: string;
    if (!nested) text = JSON.stringify(properties);
    else {
      text = '{';
      let i = 0;
      for (const key in properties) {
        const value = properties[key];
        const json = (typeof value === 'object' && value !== null ? texts![i] : undefined) ?? JSON.stringify(value);
        i++;
        if (json === undefined) continue;
        text += (text.length === 1 ? '' : ',') + JSON.stringify(key) + ':' + json;
      }
      text += '}';
    }
    if (w.string(text) > MAX_PROPERTIES_BYTES && check) throw notPlain;
  } else if (length > MAX_PROPERTIES_BYTES && check) throw notPlain;
  w.varint(entries);
  if (entries === 0) return;
  // propertyMapValue's type letter and text, written without building 's' + value.
  let i = 0;
  for (const key in properties) {
    const value = properties[key];
    switch (typeof value) {
      case 'string':
        w.string(key);
        w.taggedString(S, value);
        break;
      case 'number':
        w.string(key);
        w.taggedString(N, texts![i]);
        break;
      case 'boolean':
        w.string(key);
        w.string(value ? 'btrue' : 'bfalse');
        break;
      case 'object':
        if (value === null) break;
        w.string(key);
        w.taggedString(O, texts![i]);
        break;
    }
    i++;
  }
}

/**
 * The properties' JSON text as a String of `length` bytes, written character by character, when
 * it is printable ASCII with nothing to escape (then JSON.stringify's text is the characters as
 * they are, one byte each); false, with nothing written, otherwise.
 */
function writePlainText(w: RowBinaryWriter, properties: Record<string, unknown>, texts: readonly string[] | undefined, length: number): boolean {
  const mark = w.length;
  w.varint(length);
  w.reserve(length);
  w.asciiByte(0x7b);
  let i = 0;
  for (const key in properties) {
    if (i > 0) w.asciiByte(0x2c);
    w.asciiByte(0x22);
    if (!w.asciiText(key, false)) return rewound(w, mark);
    w.asciiByte(0x22);
    w.asciiByte(0x3a);
    const value = properties[key];
    switch (typeof value) {
      case 'string':
        w.asciiByte(0x22);
        if (!w.asciiText(value, false)) return rewound(w, mark);
        w.asciiByte(0x22);
        break;
      case 'boolean':
        w.asciiText(value ? 'true' : 'false', true);
        break;
      default:
        // A number's or an object's JSON text (may hold quotes and escapes), or null.
        if (!w.asciiText(value === null ? 'null' : texts![i], true)) return rewound(w, mark);
    }
    i++;
  }
  w.asciiByte(0x7d);
  return true;
}

function rewound(w: RowBinaryWriter, mark: number): false {
  w.rewind(mark);
  return false;
}

const S = 0x73;
const N = 0x6e;
const O = 0x6f;

/** `count` empty Strings. */
function empties(w: RowBinaryWriter, count: number): void {
  w.zeros(count);
}

/** A required string of the schema (1..max characters). */
function required(value: unknown, max: number, check: boolean): string {
  if (!check) return value as string;
  if (typeof value !== 'string' || value.length === 0 || (value.length > max && charCount(value) > max)) throw notPlain;
  return value;
}

/** An optional (absent or null) string of the schema; '' when absent. `allowEmpty`: "" is a value. */
function optional(value: unknown, max: number, check: boolean, allowEmpty = false): string {
  if (value == null) return '';
  if (!check) return value as string;
  if (typeof value !== 'string' || (value.length === 0 && !allowEmpty) || (value.length > max && charCount(value) > max)) throw notPlain;
  return value;
}

/**
 * The stored time of an event (rows.ts effectiveTimestamp): its own timestamp when valid, within
 * the last MAX_EVENT_AGE_MS and not after reception; the reception time otherwise.
 */
function eventTime(timestamp: unknown, received: number, check: boolean): number {
  if (timestamp == null) return received;
  if (check && typeof timestamp !== 'string') throw notPlain;
  const ms = isoMillis(timestamp as string);
  if (ms === undefined) {
    if (check) throw notPlain;
    return received;
  }
  return ms > received || received - ms > MAX_EVENT_AGE_MS ? received : ms;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Epoch milliseconds of an ISO 8601 timestamp, as parseIsoMillis (the service's one parser) reads
 * it. The form senders use, `YYYY-MM-DDThh:mm:ss[.fraction][Z|±hh:mm]`, is read here digit by
 * digit, with the calendar checks of ISO_8601_PATTERN; every other form goes to parseIsoMillis.
 */
export function isoMillis(s: string): number | undefined {
  const len = s.length;
  if (len < 19 || len > 35 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || s.charCodeAt(10) !== 84 || s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58) {
    return parseIsoMillis(s);
  }
  const year = digits(s, 0, 4);
  const month = digits(s, 5, 2);
  const day = digits(s, 8, 2);
  const hour = digits(s, 11, 2);
  const minute = digits(s, 14, 2);
  const second = digits(s, 17, 2);
  if (year < 100 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return parseIsoMillis(s);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day > (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1])) return parseIsoMillis(s);
  let at = 19;
  let millis = 0;
  if (at < len && s.charCodeAt(at) === 46) {
    const start = ++at;
    while (at < len && isDigit(s.charCodeAt(at))) at++;
    const count = at - start;
    if (count < 1 || count > 9) return parseIsoMillis(s);
    millis = digits(s.padEnd(start + 3, '0'), start, 3);
  }
  let offset = 0;
  if (at === len - 1 && s.charCodeAt(at) === 90) at++;
  else if (at === len - 6 && (s.charCodeAt(at) === 43 || s.charCodeAt(at) === 45) && s.charCodeAt(at + 3) === 58) {
    const oh = digits(s, at + 1, 2);
    const om = digits(s, at + 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return parseIsoMillis(s);
    offset = (s.charCodeAt(at) === 45 ? -1 : 1) * (oh * 60 + om);
    at = len;
  }
  if (at !== len) return parseIsoMillis(s);
  return Date.UTC(year, month - 1, day, hour, minute, second) - offset * 60_000 + millis;
}

const isDigit = (c: number) => c >= 48 && c <= 57;

/** The decimal number of `count` digits at `at`, or -1000000 (out of every range) when one is not a digit. */
function digits(s: string, at: number, count: number): number {
  let n = 0;
  for (let i = at; i < at + count; i++) {
    const c = s.charCodeAt(i);
    if (!isDigit(c)) return -1_000_000;
    n = n * 10 + c - 48;
  }
  return n;
}
