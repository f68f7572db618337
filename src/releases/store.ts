import { randomUUID } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import { ParamBag, compiled, type CompiledQuery } from '../clickhouse/sql.ts';
import { formatApiMillis, formatDb, formatDbMicros, formatDbMillis, fromMillis, parseIso } from '../time/iso.ts';
import { RELEASE_COLUMNS, fromReleases } from './source.ts';
import type { Release, ReleaseBody, ReleaseListQuery } from './schema.ts';

export async function createRelease(client: ClickHouseClient, orgId: string, body: ReleaseBody, now = new Date()): Promise<Release> {
  const release: Release = {
    id: randomUUID(),
    name: body.name,
    description: body.description,
    version: body.version,
    tags: body.tags,
    released_at: '',
    created_at: '',
  };
  // The columns are DateTime64(3): the instant is kept to the millisecond (truncated).
  const releasedAt = body.released_at ?? fromMillis(now.getTime());
  const createdAt = fromMillis(now.getTime());
  release.released_at = formatApiMillis(releasedAt);
  release.created_at = formatApiMillis(createdAt);
  await client.insert({
    table: 'releases',
    format: 'JSONEachRow',
    values: [{ org_id: orgId, ...release, released_at: formatDbMillis(releasedAt), created_at: formatDbMillis(createdAt) }],
  });
  return release;
}

/** Newest released_at first, optionally within [from, to]. */
export async function listReleases(client: ClickHouseClient, orgId: string, q: ReleaseListQuery): Promise<Release[]> {
  const bag = new ParamBag();
  const source = fromReleases(orgId, bag, { from: q.from ? formatDb(q.from) : undefined, to: q.to ? formatDb(q.to) : undefined });
  // `id` is its text, which orders ties deterministically.
  return queryReleases(client, compiled(`SELECT ${RELEASE_COLUMNS} ${source} ORDER BY released_at DESC, id LIMIT ${bag.add(q.limit, 'UInt32')}`, bag));
}

/**
 * The releases with released_at in [from, to] (µs, inclusive), oldest first, at most `limit`: rows
 * for toRelease, so that a read's runner (its cache, the bench's timing) runs it.
 */
export function compileReleasesBetween(orgId: string, from: bigint, to: bigint, limit: number): CompiledQuery {
  const bag = new ParamBag();
  const source = fromReleases(orgId, bag, { from: formatDbMicros(from), to: formatDbMicros(to) });
  return compiled(`SELECT ${RELEASE_COLUMNS} ${source} ORDER BY released_at, id LIMIT ${bag.add(limit, 'UInt32')}`, bag);
}

/** One release of the organization, or undefined (an id of another organization is unknown here). */
export async function findRelease(client: ClickHouseClient, orgId: string, id: string): Promise<Release | undefined> {
  const bag = new ParamBag();
  const source = fromReleases(orgId, bag);
  // `id` in WHERE is the selected text (ClickHouse resolves aliases there), hence a String parameter.
  return (await queryReleases(client, compiled(`SELECT ${RELEASE_COLUMNS} ${source} AND id = ${bag.add(id.toLowerCase(), 'String')} LIMIT 1`, bag)))[0];
}

/** The organization's newest release already released at `now` (µs), or undefined. */
export async function findLatestRelease(client: ClickHouseClient, orgId: string, now: bigint): Promise<Release | undefined> {
  const bag = new ParamBag();
  const source = fromReleases(orgId, bag, { to: formatDbMicros(now) });
  return (await queryReleases(client, compiled(`SELECT ${RELEASE_COLUMNS} ${source} ORDER BY released_at DESC, id LIMIT 1`, bag)))[0];
}

/**
 * The times come back as DateTime64(3) text ('2024-05-01 10:00:00.000'), formatted for the API by
 * the same formatter as on creation.
 */
async function queryReleases(client: ClickHouseClient, q: CompiledQuery): Promise<Release[]> {
  const rs = await client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow' });
  return (await rs.json<Release>()).map(toRelease);
}

/** A row of RELEASE_COLUMNS -> the API's release. */
export const toRelease = (r: Release): Release => ({ ...r, released_at: dbToApiMillis(r.released_at), created_at: dbToApiMillis(r.created_at) });

const dbToApiMillis = (db: string) => formatApiMillis(parseIso(db)!);
