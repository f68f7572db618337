/**
 * An event as read back: the stored row -> the JSON the API returns. Fields a type does not carry
 * (stored as '') are left out, as is an empty context; `properties` is the object that was sent.
 */
import { dbToApi } from '../../time/iso.ts';

/** The columns an event read selects, in the order of `EventReadRow`. */
export const EVENT_COLUMNS = [
  'event_id', 'type', 'event_name', 'user_id', 'user_alias', 'anonymous', 'timestamp', 'received_at', 'seq', 'properties',
  'context_locale', 'context_timezone', 'group_type', 'group_name', 'url', 'screen_name', 'agent_id', 'conversation_id',
  'copilot_session_id', 'prompt', 'response', 'rating', 'rating_scale', 'message_id',
] as const;

export type EventReadRow = Record<(typeof EVENT_COLUMNS)[number], string> & { anonymous: number | string; seq: number | string };

/** Optional text fields, in the order the record lists them. */
const OPTIONAL_TEXT = [
  'group_type', 'group_name', 'url', 'screen_name', 'agent_id', 'conversation_id', 'copilot_session_id',
  'prompt', 'response', 'rating', 'rating_scale', 'message_id',
] as const;

export interface EventRecord {
  event_id: string;
  type: string;
  event_name?: string;
  user_id: string;
  user_alias?: string;
  anonymous: boolean;
  timestamp: string;
  received_at: string;
  properties: Record<string, unknown>;
  context?: { locale?: string; timezone?: string };
  group_type?: string;
  group_name?: string;
  url?: string;
  screen_name?: string;
  agent_id?: string;
  conversation_id?: string;
  copilot_session_id?: string;
  prompt?: string;
  response?: string;
  rating?: string;
  rating_scale?: string;
  message_id?: string;
}

export function toEventRecord(row: EventReadRow): EventRecord {
  const record: EventRecord = {
    event_id: row.event_id,
    type: row.type,
    ...(row.event_name ? { event_name: row.event_name } : {}),
    user_id: row.user_id,
    ...(row.user_alias ? { user_alias: row.user_alias } : {}),
    anonymous: Number(row.anonymous) === 1,
    timestamp: dbToApi(row.timestamp),
    received_at: dbToApi(row.received_at),
    properties: parseProperties(row.properties),
  };
  if (row.context_locale || row.context_timezone) {
    record.context = {
      ...(row.context_locale ? { locale: row.context_locale } : {}),
      ...(row.context_timezone ? { timezone: row.context_timezone } : {}),
    };
  }
  for (const field of OPTIONAL_TEXT) {
    const value = row[field];
    if (value) record[field] = value;
  }
  return record;
}

function parseProperties(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text || '{}');
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
