/** Response schemas and examples of the event reads, for the OpenAPI document (routes.ts). */

const str = { type: 'string' };
const int = { type: 'integer' };

const EVENT = {
  type: 'object',
  required: ['event_id', 'type', 'user_id', 'anonymous', 'timestamp', 'received_at', 'properties'],
  properties: {
    event_id: { type: 'string', format: 'uuid' },
    type: { enum: ['identify', 'track', 'group.assign', 'group.unassign', 'page', 'screen', 'copilot'] },
    event_name: str,
    user_id: { type: 'string', format: 'uuid' },
    user_alias: str,
    anonymous: { type: 'boolean' },
    timestamp: { type: 'string', format: 'date-time' },
    received_at: { type: 'string', format: 'date-time' },
    properties: { type: 'object' },
    context: { type: 'object', properties: { locale: str, timezone: str } },
    group_type: str, group_name: str, url: str, screen_name: str, agent_id: str, conversation_id: str,
    copilot_session_id: str, prompt: str, response: str, rating: str, rating_scale: str, message_id: str,
  },
  description: 'An event as stored; fields its type does not carry are left out.',
};

const BUCKET = {
  type: 'object',
  required: ['key', 'doc_count'],
  properties: { key: str, doc_count: int, unique_users: int, aggregations: { type: 'object', description: 'the next group_by level, same shape' } },
};
const LEVEL = {
  type: 'object',
  required: ['field', 'buckets'],
  properties: {
    field: { enum: ['timestamp', 'type', 'event_name', 'property', 'user_property', 'group', 'context_locale'] },
    interval: { type: 'string', description: 'timestamp levels: e.g. "1 day", "3 hour"' },
    property_key: str,
    group_type: str,
    buckets: { type: 'array', items: BUCKET },
    other_doc_count: { type: 'integer', description: 'term levels: the summed doc_count of the buckets beyond the 100 largest' },
  },
};

export const EVENT_RESULT_SCHEMAS = {
  search: {
    schema: {
      type: 'object',
      required: ['took', 'hits'],
      properties: {
        took: int,
        hits: { type: 'object', properties: { total: { type: 'object', properties: { value: int } }, events: { type: 'array', items: EVENT } } },
        next_cursor: { type: 'string', description: 'Send it as `cursor` with the same filters_bool, filters and range for the next page; absent on the last page' },
      },
    },
    example: {
      took: 12,
      hits: {
        total: { value: 1 },
        events: [{
          event_id: '0b6c8e7e-3f57-4a0b-9a39-3a1d2c5e0f11', type: 'track', event_name: 'signup',
          user_id: '6f1c2b8e-0d6a-5c3e-9b1a-2e4f6a8c0d12', user_alias: 'user-42', anonymous: false,
          timestamp: '2026-11-22T10:00:00.000000Z', received_at: '2026-11-22T10:00:00.120000Z',
          properties: { plan: 'pro' }, context: { locale: 'en-US' },
        }],
      },
    },
  },
  aggregation: {
    schema: {
      type: 'object',
      required: ['took', 'hits', 'aggregations'],
      properties: {
        took: int,
        hits: { type: 'object', properties: { total: { type: 'object', properties: { value: int } } } },
        unique_users: { type: 'integer', description: 'when metrics holds unique_users' },
        aggregations: LEVEL,
      },
    },
    example: {
      took: 40,
      hits: { total: { value: 3 } },
      unique_users: 2,
      aggregations: {
        field: 'event_name',
        buckets: [{ key: 'signup', doc_count: 3, unique_users: 2 }],
        other_doc_count: 0,
      },
    },
  },
  profile: {
    schema: {
      type: 'object',
      required: ['user_id', 'user_alias', 'first_seen', 'last_seen', 'event_count', 'properties', 'groups'],
      properties: {
        user_id: { type: 'string', format: 'uuid' },
        user_alias: str,
        first_seen: { type: 'string', format: 'date-time' },
        last_seen: { type: 'string', format: 'date-time' },
        event_count: int,
        properties: { type: 'object', description: 'The latest identify value of each property' },
        groups: {
          type: 'array',
          items: { type: 'object', required: ['group_id', 'group_type', 'group_name'], properties: { group_id: { type: 'string', format: 'uuid' }, group_type: str, group_name: str } },
        },
      },
    },
    example: {
      user_id: '6f1c2b8e-0d6a-5c3e-9b1a-2e4f6a8c0d12', user_alias: 'user-42',
      first_seen: '2026-11-01T08:00:00.000000Z', last_seen: '2026-11-22T10:00:00.000000Z', event_count: 57,
      properties: { plan: 'pro', seats: 12 }, groups: [{ group_id: '1d3f5b7e-9a2c-5e4f-8b6d-0c2e4a6f8b1d', group_type: 'company', group_name: 'Acme' }],
    },
  },
};
