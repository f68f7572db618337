/**
 * Synthetic events, generated inside ClickHouse: `INSERT INTO events SELECT … FROM numbers_mt(n)`,
 * so ten million rows never cross the wire. The mix is the ingest bench's (bench/ingest/events.ts),
 * per 100 events: track 45, page 28, identify 8, screen 5, group.assign 3, group.unassign 1,
 * copilot 10; 15% of track/page/screen events are anonymous; a few event names dominate.
 * The materialized views of schema/002 fill user_properties and group_memberships from the same
 * INSERT, as they do for POST /1.0/event.
 *
 * Users are `user-<k>` with the ids the write path gives their alias (rows.ts userIdForAlias: a
 * UUID v5 computed here with SHA1), so GET /1.0/user/user-1 answers for seeded users; groups too.
 * Every random choice is a hash of the row number and a run constant: chunks are independent.
 * Values come from query parameters (the vocabularies); the SQL text is a constant from code.
 */
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { TALLYHOUSE_ID_NAMESPACE } from '../events/rows.ts';
import { NIL_UUID } from '../uuid.ts';
import type { Database } from '../clickhouse/database.ts';
import { numberStoredUsers } from '../events/user-number-backfill.ts';
import { AGENTS, EVENT_LOCALES as LOCALES, PLANS, SCREENS, SECTIONS, SOURCES, TRACK_NAMES, ZONES } from './event-vocabulary.ts';

export const EVENT_SEED_LIMITS = { min: 1, max: 1_000_000_000 } as const;

const COUNTRIES = ['FR', 'DE', 'US', 'GB', 'BR', 'JP', 'NL'];
const GROUP_TYPES = ['company', 'team', 'workspace'];
const COPILOT = ['service_copilot_user_prompt', 'service_copilot_response', 'service_copilot_satisfaction', 'service_copilot_conversion'];
const WORDS = (
  'the a to of and in is it for on with as this that report dashboard query customer account invoice export filter chart ' +
  'metric revenue churn cohort segment survey response score release please could how why what show explain compare ' +
  'summarize last week month trend average total user team plan feature settings data sync integration event property'
).split(' ');

/** Hash of the row and a salt, mixed with the run constant. */
const h = (salt: number) => `cityHash64({run:UInt64}, n, ${salt})`;
const u = (salt: number) => `(${h(salt)} % 1000000) / 1000000.`;
const pick = (array: string, salt: number) => `${array}[1 + ${h(salt)} % length(${array})]`;
/** A few values dominate: the index of r·r (r uniform) is skewed towards the first entries. */
const pickSkewed = (array: string, salt: number) => `${array}[1 + toUInt32(floor(${u(salt)} * ${u(salt + 1)} * length(${array})))]`;
const words = (min: number, max: number, salt: number) =>
  `arrayStringConcat(arrayMap(i -> {words:Array(String)}[1 + cityHash64({run:UInt64}, n, ${salt}, i) % length({words:Array(String)})], range(${min} + ${h(salt)} % ${max - min + 1})), ' ')`;

/** rows.ts uuidV5 in SQL: SHA1(namespace bytes || name), version 5, RFC 4122 variant. */
const uuidV5 = (name: string) => {
  const hex = `lower(hex(SHA1(concat(unhex({ns:String}), ${name}))))`;
  return (
    `toUUID(concat(substring(${hex}, 1, 8), '-', substring(${hex}, 9, 4), '-5', substring(${hex}, 14, 3), '-', ` +
    `['8','9','a','b'][(position('0123456789abcdef', substring(${hex}, 17, 1)) - 1) % 4 + 1], substring(${hex}, 18, 3), '-', substring(${hex}, 21, 12)))`
  );
};

const COLUMNS = [
  'org_id', 'timestamp', 'type', 'event_name', 'user_id', 'event_id', 'user_alias', 'anonymous', 'received_at', 'seq', 'properties',
  'context_locale', 'context_timezone', 'group_id', 'group_type', 'group_name', 'url', 'screen_name', 'agent_id', 'conversation_id',
  'copilot_session_id', 'prompt', 'response', 'rating', 'rating_scale',
];

/**
 * Rows start..start+count-1. Stage 1 draws the type, the user and the shared choices; stage 2
 * builds the columns from them (a stage boundary keeps ClickHouse from inlining aliases twice).
 */
export const EVENT_SEED_SQL = `INSERT INTO events (${COLUMNS.join(', ')})
SELECT ${COLUMNS.join(', ')} FROM (
SELECT *,
  {org:UUID} AS org_id,
  multiIf(x < 45, 'track', x < 73, 'page', x < 81, 'identify', x < 86, 'screen', x < 89, 'group.assign', x < 90, 'group.unassign', 'copilot') AS type,
  type IN ('identify', 'group.assign', 'group.unassign', 'copilot') OR ${u(3)} >= if(type = 'page', 0.35, 0.15) AS known,
  if(known, concat('user-', toString(user_k)), '') AS user_alias,
  toUInt8(NOT known) AS anonymous,
  if(known, ${uuidV5(`concat('["user","', toString({org:UUID}), '","', user_alias, '"]')`)}, generateUUIDv4(n)) AS user_id,
  ${uuidV5(`concat('["event",', toString(n), ',', toString({run:UInt64}), ']')`)} AS event_id,
  fromUnixTimestamp64Milli(toInt64({now_ms:Int64} - ${h(4)} % {span_ms:UInt64}), 'UTC') AS timestamp,
  timestamp + toIntervalMillisecond(${h(5)} % 2000) AS received_at,
  toUInt16(n % 100) AS seq,
  multiIf(type = 'track', ${pickSkewed('{track:Array(String)}', 6)}, type = 'copilot', copilot_name, '') AS event_name,
  multiIf(
    type = 'track', concat('{"source":', toJSONString(${pick('{sources:Array(String)}', 8)}), ',"plan":', toJSONString(${pick('{plans:Array(String)}', 9)}),
      ',"price":', toString(round((${h(10)} % 5000000) / 100., 2)), ',"success":', if(${u(11)} < 0.9, 'true', 'false'), '}'),
    type = 'page', concat('{"title":', toJSONString(section), ',"referrer":', toJSONString(if(${u(12)} < 0.5, 'https://www.google.com/', '')), '}'),
    type = 'identify', concat('{"email":', toJSONString(concat(user_alias, '@example.com')), ',"plan":', toJSONString(${pick('{plans:Array(String)}', 13)}),
      ',"seats":', toString(1 + ${h(14)} % 500), ',"country":', toJSONString(${pick('{countries:Array(String)}', 15)}), '}'),
    type = 'screen', concat('{"os":', if(${u(16)} < 0.5, '"ios"', '"android"'), '}'),
    type IN ('group.assign', 'group.unassign'), concat('{"role":', toJSONString(['member', 'admin', 'owner'][1 + ${h(17)} % 3]), '}'),
    '{}') AS properties,
  if(${u(18)} < 0.5, ${pick('{locales:Array(String)}', 19)}, '') AS context_locale,
  if(context_locale != '', ${pick('{zones:Array(String)}', 20)}, '') AS context_timezone,
  if(is_group, ${pick('{group_types:Array(String)}', 21)}, '') AS group_type,
  if(is_group, concat(group_type, '-', toString(1 + ${h(22)} % {groups:UInt32})), '') AS group_name,
  if(is_group, ${uuidV5(`concat('["group","', toString({org:UUID}), '",', toJSONString(group_type), ',', toJSONString(group_name), ']')`)}, toUUID('${NIL_UUID}')) AS group_id,
  if(type = 'page', concat('https://app.example.com/', section, '/', toString(${h(23)} % 100000)), '') AS url,
  if(type = 'screen', ${pick('{screens:Array(String)}', 24)}, '') AS screen_name,
  if(type = 'copilot', ${pick('{agents:Array(String)}', 25)}, '') AS agent_id,
  if(type = 'copilot' AND copilot_name != 'service_copilot_conversion', concat('conv-', toString(${h(26)} % 50000)), '') AS conversation_id,
  if(conversation_id != '', concat('sess-', toString(${h(27)} % 20000)), '') AS copilot_session_id,
  if(copilot_name = 'service_copilot_user_prompt', ${words(8, 60, 28)}, '') AS prompt,
  if(copilot_name = 'service_copilot_response', ${words(20, 200, 29)}, '') AS response,
  if(copilot_name = 'service_copilot_satisfaction', toString(1 + ${h(30)} % 5), '') AS rating,
  if(rating != '', '1-5', '') AS rating_scale
FROM (
  SELECT number + {start:UInt64} AS n,
    ${h(1)} % 100 AS x,
    x IN (86, 87, 88, 89) AS is_group,
    1 + toUInt64(floor(pow(${u(2)}, 2) * {users:UInt64})) AS user_k,
    ${pick('{sections:Array(String)}', 7)} AS section,
    if(x >= 90, {copilot:Array(String)}[multiIf(x < 94, 1, x < 98, 2, x < 99, 3, 4)], '') AS copilot_name
  FROM numbers_mt({count:UInt64})
))`;

export interface EventSeedOptions {
  orgId: string;
  events: number;
  /** Timestamps span this many days before `now` (default 90). */
  days?: number;
  /** Distinct users (default events / 100, at least 10). */
  users?: number;
  now?: Date;
  onProgress?: (done: number, total: number) => void;
  /** The database, for numbering the seeded users on a cluster (node by node); default: `client` as a single node. */
  db?: Database;
}

const SETTINGS: ClickHouseSettings = {
  send_progress_in_http_headers: 1,
  http_headers_progress_interval_ms: '5000',
  max_partitions_per_insert_block: '1000',
  max_insert_threads: String(Math.max(1, Math.min(8, availableParallelism()))),
  output_format_json_escape_forward_slashes: 0,
};

// Small enough that one INSERT finishes well within the client's 60 s request timeout on a loaded machine.
const CHUNK_ROWS = 100_000;

export async function seedEvents(client: ClickHouseClient, options: EventSeedOptions): Promise<{ inserted: number; seconds: number; users: number }> {
  const { orgId, events, days = 90, now = new Date(), onProgress } = options;
  if (!Number.isSafeInteger(events) || events < EVENT_SEED_LIMITS.min || events > EVENT_SEED_LIMITS.max) throw new RangeError(`events must be ${EVENT_SEED_LIMITS.min}..${EVENT_SEED_LIMITS.max}`);
  const users = options.users ?? Math.max(10, Math.round(events / 100));
  const base = {
    org: orgId.toLowerCase(),
    ns: TALLYHOUSE_ID_NAMESPACE.replace(/-/g, ''),
    // Each run writes new event ids (hash of the run), from the same users and groups.
    run: BigInt.asUintN(64, BigInt('0x' + randomUUID().replace(/-/g, '').slice(0, 16))).toString(),
    now_ms: now.getTime(),
    span_ms: days * 86_400_000,
    users,
    groups: Math.max(3, Math.round(users / 20)),
    track: TRACK_NAMES, sections: SECTIONS, screens: SCREENS, plans: PLANS, locales: LOCALES, zones: ZONES, sources: SOURCES,
    countries: COUNTRIES, agents: AGENTS, group_types: GROUP_TYPES, copilot: COPILOT, words: WORDS,
  };
  const started = performance.now();
  let done = 0;
  while (done < events) {
    const count = Math.min(CHUNK_ROWS, events - done);
    await client.command({ query: EVENT_SEED_SQL, query_params: { ...base, start: done, count }, clickhouse_settings: SETTINGS });
    done += count;
    onProgress?.(done, events);
  }
  // The rows were written inside the engine, past the flush that numbers users.
  await numberStoredUsers(options.db ?? client);
  return { inserted: done, seconds: (performance.now() - started) / 1000, users };
}
