import { randomUUID } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import { formatApiMillis, formatDb, formatDbMillis, fromMillis, parseIso } from '../time/iso.ts';
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
  const rs = await client.query({
    // The times come back as DateTime64(3) text ('2024-05-01 10:00:00.000'), formatted for the API
    // by the same formatter as on creation; `id` is its text, which orders ties deterministically.
    // The window is compared at microseconds (DateTime64(6) parameters): nothing is rounded.
    query: `SELECT toString(id) AS id, name, description, version, tags, released_at, created_at
            FROM releases
            WHERE org_id = {org:UUID}
              AND ({from:Nullable(DateTime64(6, 'UTC'))} IS NULL OR released_at >= {from:Nullable(DateTime64(6, 'UTC'))})
              AND ({to:Nullable(DateTime64(6, 'UTC'))} IS NULL OR released_at <= {to:Nullable(DateTime64(6, 'UTC'))})
            ORDER BY released_at DESC, id
            LIMIT {limit:UInt32}`,
    query_params: {
      org: orgId,
      from: q.from ? formatDb(q.from) : null,
      to: q.to ? formatDb(q.to) : null,
      limit: q.limit,
    },
    format: 'JSONEachRow',
  });
  return (await rs.json<Release>()).map((r) => ({ ...r, released_at: dbToApiMillis(r.released_at), created_at: dbToApiMillis(r.created_at) }));
}

const dbToApiMillis = (db: string) => formatApiMillis(parseIso(db)!);
