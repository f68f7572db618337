/**
 * The body limit of POST /1.0/event, derived from the contract so that every batch it allows is
 * admitted (a fixed 1 MiB refused 100 copilot items with 10,000-character responses of "é").
 *
 * The computation, with the limits of schema.ts:
 * - 100 items (MAX_EVENTS_PER_REQUEST) of the largest kind, a copilot item with every field at its
 *   maximum: prompt and response 10,000 characters, agent_id, conversation_id, copilot_session_id,
 *   rating, rating_scale 100, user_alias 255, context.locale and .timezone 64 (ASCII forms), the longest
 *   timestamp the pattern takes (35), the longest copilot event_name, and a `message_id` of 255
 *   (the deduplication key, MAX_CHARS.message_id).
 * - Written compactly (no whitespace, each member once) but with every character of every string
 *   and key at its longest escape: `\uXXXX` (6 bytes) for a BMP character, a surrogate pair of
 *   them (12 bytes) for an astral one (what ensure_ascii encoders such as Python's json write for
 *   emoji). So a free-form character costs 12 bytes, a character of a fixed ASCII form 6.
 * - `properties`: at most MAX_PROPERTIES_BYTES of JSON text as stored (JSON.stringify, UTF-8).
 *   On the wire each stored byte is at most 6 bytes (an ASCII character escaped as \u0041; a
 *   4-byte astral character becomes 12, a 2- or 3-byte one 6, an escaped quote 6 for 2), so
 *   6 x MAX_PROPERTIES_BYTES.
 * = MAX_EVENT_BATCH_BYTES, about 45 MB (the test re-derives it from a real worst-case batch that
 * the schema accepts). Insignificant whitespace, repeated keys or unknown fields can make a valid
 * batch longer still; such bodies are not the contract's and may be refused with 413.
 */
import { MAX_CHARS, MAX_EVENTS_PER_REQUEST, MAX_PROPERTIES_BYTES } from './schema.ts';

/** An astral character: one character, the longest escape (12 bytes). */
const ASTRAL = '\u{1F600}';

/** The longest timestamp ISO_8601_PATTERN accepts: a fraction of 9 digits and a `±HH:MM` zone. */
const LONGEST_TIMESTAMP = '2024-02-29T23:59:59.123456789+23:59';

const longest = (max: number) => ASTRAL.repeat(max);

/** A locale of the form LOCALE_PATTERN takes, MAX_CHARS.locale (64) characters long. */
const LONGEST_LOCALE = `en${'-abcdefgh'.repeat(6)}-abcdefg`;

/**
 * The largest item of each kind without its `properties` (counted apart, see above). Copilot is
 * the largest; the others are kept so that the choice is checked rather than assumed.
 */
export function worstCaseItems(): Record<string, unknown>[] {
  const common = {
    user_alias: longest(MAX_CHARS.user_alias),
    message_id: longest(MAX_CHARS.message_id),
    timestamp: LONGEST_TIMESTAMP,
    // ASCII forms (schema.ts LOCALE_PATTERN, TIMEZONE_PATTERN): 64 characters of 6 bytes escaped.
    context: { locale: LONGEST_LOCALE, timezone: 'Z'.repeat(MAX_CHARS.timezone) },
  };
  return [
    { type: 'identify', ...common },
    { type: 'track', ...common, event_name: longest(MAX_CHARS.event_name) },
    { type: 'group.unassign', ...common, group_type: longest(MAX_CHARS.group_type), group_name: longest(MAX_CHARS.group_name) },
    { type: 'page', ...common, url: longest(MAX_CHARS.url) },
    { type: 'screen', ...common, screen_name: longest(MAX_CHARS.screen_name) },
    {
      type: 'copilot',
      ...common,
      event_name: 'service_copilot_satisfaction',
      agent_id: longest(MAX_CHARS.agent_id),
      conversation_id: longest(MAX_CHARS.conversation_id),
      copilot_session_id: longest(MAX_CHARS.copilot_session_id),
      prompt: longest(MAX_CHARS.prompt),
      response: longest(MAX_CHARS.response),
      rating: longest(MAX_CHARS.rating),
      rating_scale: longest(MAX_CHARS.rating_scale),
    },
  ];
}

/** Length of the compact JSON text of `value` with every string and key character escaped. */
export function escapedJsonLength(value: unknown): number {
  if (typeof value === 'string') {
    let n = 2;
    for (const ch of value) n += ch.length === 2 ? 12 : 6;
    return n;
  }
  if (Array.isArray(value)) return 2 + Math.max(0, value.length - 1) + value.reduce((sum: number, x) => sum + escapedJsonLength(x), 0);
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, x]) => x !== undefined);
    return 2 + Math.max(0, entries.length - 1) + entries.reduce((sum, [k, x]) => sum + escapedJsonLength(k) + 1 + escapedJsonLength(x), 0);
  }
  return JSON.stringify(value).length;
}

/** `,"properties":` plus the properties' worst wire form. */
const PROPERTIES_WIRE_BYTES = 1 + escapedJsonLength('properties') + 1 + 6 * MAX_PROPERTIES_BYTES;

export const MAX_EVENT_ITEM_BYTES = Math.max(...worstCaseItems().map(escapedJsonLength)) + PROPERTIES_WIRE_BYTES;

/** `[` item `,` item ... `]`. */
export const MAX_EVENT_BATCH_BYTES = 2 + MAX_EVENTS_PER_REQUEST * MAX_EVENT_ITEM_BYTES + (MAX_EVENTS_PER_REQUEST - 1);
