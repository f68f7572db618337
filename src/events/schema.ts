/**
 * The request body of POST /1.0/event: a JSON array of 1..100 event items.
 *
 * Every item is a `v.variant` on `type`; a `copilot` item is itself a variant on `event_name`, so
 * the conditional rules of the spec ("conversation_id required except for conversion", "prompt
 * required for user_prompt", ...) are plain required/optional fields of one object per event
 * name. That keeps the rules declarative, reports every problem at once (no pipe step is skipped
 * because an earlier one failed) and converts to JSON Schema as nested `oneOf`s.
 *
 * Objects are `v.object`: unknown extra fields are stripped, never stored. Optional fields accept
 * `null` as "absent" (many JSON encoders write nulls for unset members).
 *
 * String limits, in characters (code points, not UTF-16 units: see src/chars.ts), MAX_CHARS below.
 * From the spec: agent_id, conversation_id, copilot_session_id 100; prompt, response 10000. Our
 * own (so that one field cannot bloat a row or a LowCardinality dictionary):
 *   user_alias, event_name (track), group_type, group_name, screen_name        1..255
 *   message_id (any type; the dedup key, see src/events/message-ids.ts)        1..255
 *   url                                                                        1..8192
 *   rating, rating_scale                                                       1..100 (copilot)
 *   context.locale 64, context.timezone 64 (each also of its form: LOCALE_PATTERN, TIMEZONE_PATTERN)
 * `properties`, an open object in the spec, is bounded by its JSON text: MAX_PROPERTIES_BYTES.
 * The body limit of the endpoint is derived from all of these (src/events/limits.ts), so that it
 * admits every batch they allow.
 * Required strings must be non-empty: an empty name/id is a missing one. An empty `user_alias`
 * is rejected too: it would map every sender of "" to the same user.
 *
 * No check/custom actions (regex ones convert to `pattern`): `toJsonSchema(eventBatchSchema)` converts it as it is.
 */
import * as v from 'valibot';
import { maxChars } from '../chars.ts';
import { invalid, issuePath, type Issue } from '../errors.ts';
import { ISO_8601_PATTERN } from '../time/iso.ts';

export const MAX_EVENTS_PER_REQUEST = 100;

export const EVENT_TYPES = ['identify', 'track', 'group.assign', 'group.unassign', 'page', 'screen', 'copilot'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const COPILOT_EVENT_NAMES = [
  'service_copilot_user_prompt',
  'service_copilot_response',
  'service_copilot_conversion',
  'service_copilot_satisfaction',
] as const;
export type CopilotEventName = (typeof COPILOT_EVENT_NAMES)[number];

/** Most characters of each text field (code points). limits.ts derives the body limit from them. */
export const MAX_CHARS = {
  user_alias: 255,
  message_id: 255,
  event_name: 255,
  group_type: 255,
  group_name: 255,
  url: 8192,
  screen_name: 255,
  agent_id: 100,
  conversation_id: 100,
  copilot_session_id: 100,
  prompt: 10_000,
  response: 10_000,
  rating: 100,
  rating_scale: 100,
  locale: 64,
  timezone: 64,
} as const;

/**
 * Most bytes of an item's `properties` as JSON text (UTF-8 of JSON.stringify, as stored): 32 KiB,
 * the per-event bound of the common analytics APIs. The spec leaves the object open; without a
 * bound no body limit could admit every valid batch. Beyond it: 400 naming `[i].properties`.
 */
export const MAX_PROPERTIES_BYTES = 32 * 1024;

/** A non-empty string of at most `max` characters. */
const required = (max: number) =>
  v.pipe(v.string('Must be a string'), v.minLength(1, 'Must not be empty'), maxChars(max, `Must be at most ${max} characters`));
/** An optional (absent or null) string; `allowEmpty` for free-form values where "" is harmless. */
const optional = (max: number, allowEmpty = false) =>
  v.nullish(
    allowEmpty
      ? v.pipe(v.string('Must be a string'), maxChars(max, `Must be at most ${max} characters`))
      : required(max),
  );

const timestampSchema = v.pipe(
  v.string('Must be an ISO 8601 string'),
  v.regex(ISO_8601_PATTERN, 'Must be an ISO 8601 date-time, e.g. 2026-11-22T10:00:00.000Z'),
);

/**
 * A JSON object of properties; values are any JSON. valibot's record also takes arrays (they are
 * objects, and it rebuilds them as {"0": ...} before any pipe step sees them), so parseEventBatch
 * rejects array properties itself; JSON Schema's `type: "object"` already says so.
 */
const propertiesSchema = v.record(v.string(), v.unknown(), 'Must be a JSON object');

/**
 * `context.locale`, "language-REGION form" in the spec: a BCP 47 language tag as clients send it,
 * checked for its form only (not against a registry): a language of 2-3 letters, then subtags of
 * 1-8 letters or digits (script, region, variants: `en`, `en-US`, `pt-BR`, `es-419`,
 * `zh-Hant-TW`), `_` taken for `-` (`en_US`, the POSIX/Java form many SDKs send). "" is "not
 * given", as before. Not of the form: `English`, `en US`, `en-US.UTF-8`, `C`, `12`.
 */
export const LOCALE_PATTERN = /^(?:[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*)?$/;
export const LOCALE_MESSAGE = 'Must be a locale in language-REGION form (BCP 47), e.g. en, en-US, pt-BR, zh-Hant-TW (en_US is taken too)';
/**
 * `context.timezone`, "IANA name form" in the spec: the form of a tz database name, not a lookup
 * in this machine's copy of the database (a zone newer than it would be refused): `/`-separated
 * parts, each starting with a letter, of ASCII letters, digits, `_`, `-`, `+` and `.` (`UTC`,
 * `Europe/Paris`, `America/Argentina/Buenos_Aires`, `America/Port-au-Prince`, `Etc/GMT+5`,
 * `EST5EDT`). "" is "not given". Not of the form: `+05:00`, `GMT+5:30`, `Eastern Standard Time`,
 * `Europe//Paris`, `/UTC`.
 */
export const TIMEZONE_PATTERN = /^(?:[A-Za-z][A-Za-z0-9_+.-]*(?:\/[A-Za-z][A-Za-z0-9_+.-]*)*)?$/;
export const TIMEZONE_MESSAGE = 'Must be an IANA time zone name, e.g. UTC, Europe/Paris, America/Argentina/Buenos_Aires, Etc/GMT+5';

const contextSchema = v.object(
  {
    locale: v.nullish(v.pipe(v.string('Must be a string'), maxChars(MAX_CHARS.locale, `Must be at most ${MAX_CHARS.locale} characters`), v.regex(LOCALE_PATTERN, LOCALE_MESSAGE))),
    timezone: v.nullish(v.pipe(v.string('Must be a string'), maxChars(MAX_CHARS.timezone, `Must be at most ${MAX_CHARS.timezone} characters`), v.regex(TIMEZONE_PATTERN, TIMEZONE_MESSAGE))),
  },
  'Must be an object',
);

/** Fields every event type accepts. */
const commonEntries = {
  user_alias: optional(MAX_CHARS.user_alias),
  /** The sender's id of this item: stored once per organization within 7 days (message-ids.ts). */
  message_id: optional(MAX_CHARS.message_id),
  properties: v.nullish(propertiesSchema),
  timestamp: v.nullish(timestampSchema),
  context: v.nullish(contextSchema),
};

const identifySchema = v.object({ type: v.literal('identify'), ...commonEntries });
const trackSchema = v.object({ type: v.literal('track'), ...commonEntries, event_name: required(MAX_CHARS.event_name) });
const groupEntries = { ...commonEntries, group_type: optional(MAX_CHARS.group_type), group_name: required(MAX_CHARS.group_name) };
const groupAssignSchema = v.object({ type: v.literal('group.assign'), ...groupEntries });
const groupUnassignSchema = v.object({ type: v.literal('group.unassign'), ...groupEntries });
const pageSchema = v.object({ type: v.literal('page'), ...commonEntries, url: required(MAX_CHARS.url) });
const screenSchema = v.object({ type: v.literal('screen'), ...commonEntries, screen_name: required(MAX_CHARS.screen_name) });

/** Every copilot field, optional; each event name below makes its own ones required. */
const copilotEntries = {
  type: v.literal('copilot'),
  ...commonEntries,
  agent_id: required(MAX_CHARS.agent_id),
  conversation_id: optional(MAX_CHARS.conversation_id),
  copilot_session_id: optional(MAX_CHARS.copilot_session_id),
  prompt: optional(MAX_CHARS.prompt),
  response: optional(MAX_CHARS.response),
  rating: optional(MAX_CHARS.rating),
  rating_scale: optional(MAX_CHARS.rating_scale),
};
const conversationEntries = { conversation_id: required(MAX_CHARS.conversation_id), copilot_session_id: required(MAX_CHARS.copilot_session_id) };

const copilotSchema = v.variant('event_name', [
  v.object({ ...copilotEntries, ...conversationEntries, event_name: v.literal('service_copilot_user_prompt'), prompt: required(MAX_CHARS.prompt) }),
  v.object({ ...copilotEntries, ...conversationEntries, event_name: v.literal('service_copilot_response'), response: required(MAX_CHARS.response) }),
  v.object({ ...copilotEntries, event_name: v.literal('service_copilot_conversion') }),
  v.object({
    ...copilotEntries,
    ...conversationEntries,
    event_name: v.literal('service_copilot_satisfaction'),
    rating: required(MAX_CHARS.rating),
    rating_scale: required(MAX_CHARS.rating_scale),
  }),
]);

export const eventItemSchema = v.variant(
  'type',
  [identifySchema, trackSchema, groupAssignSchema, groupUnassignSchema, pageSchema, screenSchema, copilotSchema],
);

const SIZE_MESSAGE = `Body must contain 1 to ${MAX_EVENTS_PER_REQUEST} events`;

export const eventBatchSchema = v.pipe(
  v.array(eventItemSchema, `Body must be a JSON array of 1 to ${MAX_EVENTS_PER_REQUEST} events`),
  v.minLength(1, SIZE_MESSAGE),
  v.maxLength(MAX_EVENTS_PER_REQUEST, SIZE_MESSAGE),
);

export type ParsedEvent = v.InferOutput<typeof eventItemSchema>;
export type CopilotEvent = Extract<ParsedEvent, { type: 'copilot' }>;

/**
 * Parses a request body into events, all or nothing: any invalid item makes the whole batch a 400
 * whose issues name every bad item by index and field (`[3].event_name`). A batch of the wrong
 * size is rejected before its items are looked at: it cannot succeed, and a body of thousands of
 * tiny items should not cost thousands of validations.
 */
export function parseEventBatch(body: unknown): ParsedEvent[] {
  if (Array.isArray(body) && (body.length < 1 || body.length > MAX_EVENTS_PER_REQUEST)) {
    throw invalid('Invalid event batch', [{ path: '', message: SIZE_MESSAGE }]);
  }
  const result = v.safeParse(eventBatchSchema, body, { abortEarly: false });
  const issues = [...(result.issues ?? []).map(toIssue), ...propertiesIssues(body)];
  if (!result.success || issues.length > 0) throw invalid('Invalid event batch', issues);
  // valibot's record rebuilds the object and leaves out the keys `__proto__`, `constructor` and
  // `prototype` (a guard for objects that are merged into others). Properties are only ever
  // serialized again, never merged, and JSON.parse made them own data properties: keep the
  // parsed object itself, every key included.
  const items = body as { properties?: unknown }[];
  result.output.forEach((event, i) => {
    if (event.properties != null) event.properties = items[i].properties as Record<string, unknown>;
  });
  return result.output;
}

/**
 * `properties` that the schema cannot judge: an array (valibot's record takes arrays, rebuilt as
 * {"0": ...}; JSON Schema's `type: "object"` already refuses them) or a JSON text over
 * MAX_PROPERTIES_BYTES.
 */
function propertiesIssues(body: unknown): Issue[] {
  if (!Array.isArray(body)) return [];
  return body.flatMap((item: unknown, index) => {
    const properties = item !== null && typeof item === 'object' ? (item as { properties?: unknown }).properties : undefined;
    if (properties === null || typeof properties !== 'object') return [];
    if (Array.isArray(properties)) return [{ path: `[${index}].properties`, message: 'Must be a JSON object' }];
    const bytes = Buffer.byteLength(JSON.stringify(properties), 'utf8');
    return bytes > MAX_PROPERTIES_BYTES
      ? [{ path: `[${index}].properties`, message: `Must be at most ${MAX_PROPERTIES_BYTES} bytes as JSON text (is ${bytes})` }]
      : [];
  });
}

function toIssue(issue: v.BaseIssue<unknown>): Issue {
  return { path: issuePath(issue), message: describe(issue) };
}

/**
 * Plain messages where valibot's defaults are cryptic ("Invalid key: Expected "x" but received
 * undefined"). Variant issues are worded here rather than by a schema message because the outer
 * variant also reports the nested copilot variant's bad `event_name` with its own message.
 */
function describe(issue: v.BaseIssue<unknown>): string {
  const last = issue.path?.[issue.path.length - 1];
  const field = last && typeof last.key === 'string' ? last.key : undefined;
  if (issue.type === 'variant') {
    if (field === undefined) return 'Each event must be a JSON object';
    const choices = (issue.expected ?? '').replace(/^\((.*)\)$/, '$1').split(' | ').join(', ');
    return issue.input === undefined
      ? `Missing required field "${field}" (one of ${choices})`
      : `"${field}" must be one of ${choices}; received ${issue.received}`;
  }
  if (issue.input === undefined && field !== undefined) return `Missing required field "${field}"`;
  return issue.message;
}

/** The answer of POST /1.0/event: how many events were committed, and how long the commit took (ms). */
export const ingestResultSchema = v.object({
  /** Items accepted: stored now, or already stored (duplicates). */
  count: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_EVENTS_PER_REQUEST)),
  /** Items not stored again: their message_id was stored in the last 7 days (or earlier in this request). */
  duplicates: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(MAX_EVENTS_PER_REQUEST)),
  lag: v.number(),
});
