/**
 * Parsed events -> rows of the `events` table (schema/002-events.sql): what each column holds.
 * The write path encodes the same rows in one walk (encode.ts), held to these by a property test;
 * the ids and the stored time below are shared by both. Pure apart from random ids: no clock (the
 * caller passes the reception time), no I/O.
 *
 * Ids:
 * - event_id: random UUID v4.
 * - user_id: with `user_alias`, a name-based UUID v5 of (org, alias): the same on every instance
 *   and every day with no lookup. Without an alias, a fresh random UUID per item, `anonymous = 1`.
 * - group_id: UUID v5 of (org, group_type ?? '', group_name); the nil UUID on non-group events
 *   (the column is not Nullable).
 * Names are hashed as JSON arrays with a leading kind tag, so no two different tuples share a
 * name (JSON escapes quotes and separators) and a user id never equals a group id.
 */
import { hash, randomUUID } from 'node:crypto';
import { parse as parseUuid, stringify as stringifyUuid, v5 } from 'uuid';
import { charCount } from '../chars.ts';
import { invalid } from '../errors.ts';
import { formatDbDate, parseIsoMillis } from '../time/iso.ts';
import type { EventType, ParsedEvent } from './schema.ts';
import { NIL_UUID, V5Prefix } from '../uuid.ts';

/**
 * Namespace of every name-based id of tallyhouse. Derived once, reproducibly, as
 * uuidV5(URL namespace 6ba7b811-9dad-11d1-80b4-00c04fd430c8, 'https://tallyhouse.dev/ns/ids');
 * a unit test re-derives it. Changing it would change every user and group id: never do.
 */
export const TALLYHOUSE_ID_NAMESPACE = '06a9ccfd-2b53-501d-a918-954ecc6dfc47';

export { NIL_UUID };

/** Events older than this (relative to reception) get the reception time instead. */
export const MAX_EVENT_AGE_MS = 7 * 24 * 60 * 60 * 1000;

/** One row of `events`, as text. */
export interface EventRow {
  org_id: string;
  event_id: string;
  type: EventType;
  /** track: the name; copilot: the copilot event name; otherwise ''. */
  event_name: string;
  user_id: string;
  user_alias: string;
  anonymous: 0 | 1;
  /** DateTime64(3, 'UTC') text, 'YYYY-MM-DD hh:mm:ss.mmm'. */
  timestamp: string;
  received_at: string;
  /** 0-based position of the item in its request: orders equal timestamps of one request. */
  seq: number;
  /** The item's properties as JSON text, '{}' when absent. */
  properties: string;
  context_locale: string;
  context_timezone: string;
  group_id: string;
  group_type: string;
  group_name: string;
  url: string;
  screen_name: string;
  agent_id: string;
  conversation_id: string;
  copilot_session_id: string;
  prompt: string;
  response: string;
  rating: string;
  rating_scale: string;
  /** The sender's message id, '' when absent (never deduplicated then). */
  message_id: string;
}

/** RFC 9562 (ex-4122) name-based UUID, version 5 (SHA-1), from the `uuid` package. */
export function uuidV5(namespace: string | Uint8Array, name: string): string {
  return v5(name, namespace);
}

/** The namespace as bytes, parsed once rather than on every id. */
const TALLYHOUSE_NAMESPACE_BYTES = parseUuid(TALLYHOUSE_ID_NAMESPACE);

/**
 * Name-based ids repeat: a product sends many events per user and group. Hashing costs about as
 * much as building the rest of a row, so the ids of the names seen last are kept, per organization
 * and kind, as their 16 bytes (what the INSERT sends). Bounded: past the limit the cache starts
 * over, never a growing map.
 */
const ID_CACHE_LIMIT = 100_000;
type IdKind = 'user' | 'group';

/** A name-based id: its 16 bytes, and the same as a latin1 string (a map key: user-numbers.ts). */
export interface NameId {
  readonly bytes: Uint8Array;
  readonly key: string;
}

/** Per kind, per organization id (a lookup by the request's own org string: no key built per row). */
let idCache: Record<IdKind, Map<string, Map<string, NameId>>> = { user: new Map(), group: new Map() };
let idCacheSize = 0;
const cachedId = (kind: IdKind, orgId: string, key: string): NameId | undefined => idCache[kind].get(orgId)?.get(key);
function rememberId(kind: IdKind, orgId: string, key: string, bytes: Uint8Array): NameId {
  if (idCacheSize >= ID_CACHE_LIMIT) {
    idCache = { user: new Map(), group: new Map() };
    idCacheSize = 0;
    userPrefixes.clear();
  }
  const byOrg = idCache[kind];
  let ids = byOrg.get(orgId);
  if (!ids) byOrg.set(orgId, (ids = new Map()));
  const id: NameId = { bytes, key: latin1Key(bytes) };
  ids.set(key, id);
  idCacheSize++;
  return id;
}

/** 16 bytes as a latin1 string (one character a byte). */
const latin1Key = (b: Uint8Array): string =>
  String.fromCharCode(b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);

/**
 * The cached ids' bytes are 16-byte views of shared slabs: no buffer of its own per id (an
 * ArrayBuffer each, which the garbage collector tracks one by one).
 */
const ID_SLAB_BYTES = 16 * 1024;
let idSlab = new Uint8Array(ID_SLAB_BYTES);
let idSlabAt = 0;
function slabId(): Uint8Array {
  if (idSlabAt === ID_SLAB_BYTES) {
    idSlab = new Uint8Array(ID_SLAB_BYTES);
    idSlabAt = 0;
  }
  idSlabAt += 16;
  return idSlab.subarray(idSlabAt - 16, idSlabAt);
}

/**
 * Per organization id (the request's own string), SHA-1 of the namespace and `["user","<org>","`
 * done once (V5Prefix): a user id then hashes only the rest of its name. Cleared with the cache.
 */
const userPrefixes = new Map<string, V5Prefix>();
const MAX_USER_PREFIXES = 10_000;

/** uuidV5(namespace, JSON.stringify(['user', orgId.toLowerCase(), alias])) as 16 bytes. */
function userId(orgId: string, alias: string): Uint8Array {
  let prefix = userPrefixes.get(orgId);
  if (!prefix) {
    if (userPrefixes.size >= MAX_USER_PREFIXES) userPrefixes.clear();
    prefix = new V5Prefix(TALLYHOUSE_NAMESPACE_BYTES, `["user",${JSON.stringify(orgId.toLowerCase())},"`);
    userPrefixes.set(orgId, prefix);
  }
  const id = slabId();
  // The name's rest: the alias as JSON writes it inside its quotes, then `"]`. An alias of
  // printable ASCII without `"` or `\` is its own JSON text; any other goes through JSON.stringify.
  const ok = plainAscii(alias) ? prefix.idOf(alias, '"]', id, 0) : prefix.idOf(JSON.stringify(alias).slice(1), ']', id, 0);
  return ok ? id : nameId(JSON.stringify(['user', orgId.toLowerCase(), alias]));
}

/** Printable ASCII with nothing JSON escapes. */
function plainAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}

/** The namespace's bytes, then the name's UTF-8 bytes: what SHA-1 hashes for a v5 id. */
const nameBytes = Buffer.allocUnsafe(16 + 8192);
nameBytes.set(TALLYHOUSE_NAMESPACE_BYTES, 0);

/**
 * uuidV5(TALLYHOUSE_ID_NAMESPACE, name) as its 16 bytes, hashed in one call on bytes written into
 * a reused buffer (uuid's v5 encodes the name in JS and builds a crypto Hash object per id). The
 * same bytes for every well-formed string (a unit test holds it to uuid's v5); longer names than
 * the buffer takes go to uuid's v5.
 */
function nameId(name: string): Uint8Array {
  // A UTF-16 code unit is at most 3 bytes of UTF-8.
  if (16 + 3 * name.length > nameBytes.length) return v5(name, TALLYHOUSE_NAMESPACE_BYTES, new Uint8Array(16));
  const end = 16 + nameBytes.write(name, 16, 'utf8');
  const digest = hash('sha1', nameBytes.subarray(0, end), 'buffer');
  // A copy: the cache keeps it, and must not keep the digest's memory alive with it.
  const id = new Uint8Array(16);
  id.set(digest.subarray(0, 16));
  // RFC 9562 version 5 and variant bits.
  id[6] = (id[6] & 0x0f) | 0x50;
  id[8] = (id[8] & 0x3f) | 0x80;
  return id;
}

/** The `:user_alias` path parameter (profile, deletion): 1 to 255 characters, as events carry it. */
export function userAliasParam(params: Record<string, string>): string {
  const alias = params.user_alias ?? '';
  if (alias.length < 1 || charCount(alias) > 255) throw invalid('user_alias must be 1 to 255 characters', [{ path: 'user_alias', message: 'must be 1 to 255 characters' }]);
  return alias;
}

/** The stable internal user id of an alias within an organization. */
export function userIdForAlias(orgId: string, alias: string): string {
  return stringifyUuid(userIdBytes(orgId, alias));
}

/** userIdForAlias as its 16 bytes (RFC 9562 order). */
export function userIdBytes(orgId: string, alias: string): Uint8Array {
  return userNameId(orgId, alias).bytes;
}

/** userIdForAlias as its bytes and its latin1 key. */
export function userNameId(orgId: string, alias: string): NameId {
  return cachedId('user', orgId, alias) ?? rememberId('user', orgId, alias, userId(orgId, alias));
}

/** The stable id of a group within an organization; a missing group_type is ''. */
export function groupIdFor(orgId: string, groupType: string | null | undefined, groupName: string): string {
  return stringifyUuid(groupIdBytes(orgId, groupType, groupName));
}

/** groupIdFor as its 16 bytes. */
export function groupIdBytes(orgId: string, groupType: string | null | undefined, groupName: string): Uint8Array {
  const type = groupType ?? '';
  // JSON-encoded key: no two (type, name) pairs share one.
  const key = JSON.stringify([type, groupName]);
  return (cachedId('group', orgId, key) ?? rememberId('group', orgId, key, nameId(JSON.stringify(['group', orgId.toLowerCase(), type, groupName])))).bytes;
}

/**
 * The time an event is stored with: its own timestamp when it has a valid one within the last
 * 7 days (inclusive) and not after reception; the reception time otherwise.
 */
export function effectiveTimestamp(timestamp: string | null | undefined, receivedAt: Date): Date {
  if (timestamp == null) return receivedAt;
  const ms = parseIsoMillis(timestamp);
  const received = receivedAt.getTime();
  if (ms === undefined || ms > received || received - ms > MAX_EVENT_AGE_MS) return receivedAt;
  return new Date(ms);
}

export function toEventRows(orgId: string, events: readonly ParsedEvent[], receivedAt: Date): EventRow[] {
  const received = formatDbDate(receivedAt);
  return events.map((event, seq) => {
    const alias = event.user_alias ?? '';
    const row: EventRow = {
      org_id: orgId,
      event_id: randomUUID(),
      type: event.type,
      event_name: '',
      user_id: alias ? userIdForAlias(orgId, alias) : randomUUID(),
      user_alias: alias,
      anonymous: alias ? 0 : 1,
      timestamp: formatDbDate(effectiveTimestamp(event.timestamp, receivedAt)),
      received_at: received,
      seq,
      properties: JSON.stringify(event.properties ?? {}),
      context_locale: event.context?.locale ?? '',
      context_timezone: event.context?.timezone ?? '',
      group_id: NIL_UUID,
      group_type: '',
      group_name: '',
      url: '',
      screen_name: '',
      agent_id: '',
      conversation_id: '',
      copilot_session_id: '',
      prompt: '',
      response: '',
      rating: '',
      rating_scale: '',
      message_id: event.message_id ?? '',
    };
    switch (event.type) {
      case 'identify':
        break;
      case 'track':
        row.event_name = event.event_name;
        break;
      case 'group.assign':
      case 'group.unassign':
        row.group_id = groupIdFor(orgId, event.group_type, event.group_name);
        row.group_type = event.group_type ?? '';
        row.group_name = event.group_name;
        break;
      case 'page':
        row.url = event.url;
        break;
      case 'screen':
        row.screen_name = event.screen_name;
        break;
      case 'copilot':
        row.event_name = event.event_name;
        row.agent_id = event.agent_id;
        row.conversation_id = event.conversation_id ?? '';
        row.copilot_session_id = event.copilot_session_id ?? '';
        row.prompt = event.prompt ?? '';
        row.response = event.response ?? '';
        row.rating = event.rating ?? '';
        row.rating_scale = event.rating_scale ?? '';
        break;
      default:
        return assertNever(event);
    }
    return row;
  });
}

/**
 * What `events.property_map` holds for an event's properties (schema/141): one entry per
 * top-level key whose value is not null, its value as a type letter then the value: 's' + the
 * string, 'n' + the number's JSON text, 'b' + true/false, 'o' + the JSON text of an object or
 * array. Numbers and objects are as JSON.stringify writes them into `properties`, so schema/141's
 * DEFAULT (the same from the stored JSON text, for rows no service wrote) gives the same map.
 */
export function propertyMapValue(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return 's' + value;
    case 'number':
      return 'n' + JSON.stringify(value);
    case 'boolean':
      return value ? 'btrue' : 'bfalse';
    case 'object':
      return value === null ? undefined : 'o' + JSON.stringify(value);
    default:
      // undefined (JSON.stringify leaves such a key out of `properties` too).
      return undefined;
  }
}

function assertNever(value: never): never {
  throw new Error(`Unhandled event type: ${JSON.stringify(value)}`);
}
