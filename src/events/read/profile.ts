/**
 * GET /1.0/user/<user_alias>: what the events say about one user of the organization: when they
 * were first and last seen, how many events they sent, their current properties (the latest
 * identify value of each) and their current groups. An alias never seen is a 404.
 *
 * The user id is the name-based id the write path gives the alias (rows.ts userIdForAlias), so
 * no lookup by alias is needed: the events' user_id bloom filter skips the granules without the
 * user, and user_properties / group_memberships are sorted by (org_id, user_id).
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { ParamBag, compiled, type CompiledQuery } from '../../clickhouse/sql.ts';
import { notFound } from '../../errors.ts';
import { dbToApi } from '../../time/iso.ts';
import { userIdForAlias } from '../rows.ts';
import { EventSource } from './source.ts';
import { READ_SETTINGS } from '../../query/settings.ts';

export interface UserProfile {
  user_id: string;
  user_alias: string;
  first_seen: string;
  last_seen: string;
  event_count: number;
  properties: Record<string, unknown>;
  groups: { group_id: string; group_type: string; group_name: string }[];
}

export function compileUserProfile(orgId: string, userId: string): { activity: CompiledQuery; properties: CompiledQuery; groups: CompiledQuery } {
  const source = (bag: ParamBag) =>
    new EventSource({ orgId, filtersBool: 'AND', filters: [{ kind: 'user_id', op: 'eq', negate: false, values: [userId] }] }, bag);
  const a = new ParamBag();
  const activity = compiled(
    `SELECT count() AS event_count, toString(minOrNull(timestamp)) AS first_seen, toString(maxOrNull(timestamp)) AS last_seen ${source(a).from()}`,
    a,
  );
  const p = new ParamBag();
  const properties = compiled(source(p).propertiesOfUser(p.add(userId, 'UUID')), p);
  const g = new ParamBag();
  const groups = compiled(source(g).groupsOfUser(g.add(userId, 'UUID')), g);
  return { activity, properties, groups };
}

export async function userProfile(client: ClickHouseClient, orgId: string, alias: string): Promise<UserProfile> {
  const userId = userIdForAlias(orgId, alias);
  const q = compileUserProfile(orgId, userId);
  const run = async <T>(c: CompiledQuery) =>
    (await client.query({ query: c.sql, query_params: { ...c.params }, format: 'JSONEachRow', clickhouse_settings: READ_SETTINGS })).json<T>();
  const [activity, properties, groups] = await Promise.all([
    run<{ event_count: number | string; first_seen: string | null; last_seen: string | null }>(q.activity),
    run<{ key: string; value: string }>(q.properties),
    run<{ group_id: string; group_type: string; group_name: string }>(q.groups),
  ]);
  const seen = activity[0];
  if (!seen || Number(seen.event_count) === 0 || !seen.first_seen || !seen.last_seen) throw notFound(`No events of user "${alias}" in this organization`);
  return {
    user_id: userId,
    user_alias: alias,
    first_seen: dbToApi(seen.first_seen),
    last_seen: dbToApi(seen.last_seen),
    event_count: Number(seen.event_count),
    properties: Object.fromEntries(properties.map((row) => [row.key, parseJson(row.value)])),
    groups,
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
