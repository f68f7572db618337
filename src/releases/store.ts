import { randomUUID } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import { toClickHouseDateTime64 } from '../clickhouse/sql.ts';
import type { Release, ReleaseBody, ReleaseListQuery } from './schema.ts';

const ISO = `'%Y-%m-%dT%H:%i:%S.%fZ'`;

export async function createRelease(client: ClickHouseClient, orgId: string, body: ReleaseBody, now = new Date()): Promise<Release> {
  const release: Release = {
    id: randomUUID(),
    name: body.name,
    description: body.description,
    version: body.version,
    tags: body.tags,
    released_at: new Date(body.released_at ?? now).toISOString(),
    created_at: now.toISOString(),
  };
  await client.insert({
    table: 'releases',
    format: 'JSONEachRow',
    values: [{ org_id: orgId, ...release, released_at: Date.parse(release.released_at), created_at: now.getTime() }],
  });
  return release;
}

/** Newest released_at first, optionally within [from, to]. */
export async function listReleases(client: ClickHouseClient, orgId: string, q: ReleaseListQuery): Promise<Release[]> {
  const rs = await client.query({
    // The time aliases differ from the column names so that WHERE and ORDER BY see the DateTime64
    // columns; `id` is its text, which orders ties deterministically too.
    query: `SELECT toString(id) AS id, name, description, version, tags,
                   formatDateTime(released_at, ${ISO}) AS released_at_iso, formatDateTime(created_at, ${ISO}) AS created_at_iso
            FROM releases
            WHERE org_id = {org:UUID}
              AND ({from:Nullable(DateTime64(3, 'UTC'))} IS NULL OR released_at >= {from:Nullable(DateTime64(3, 'UTC'))})
              AND ({to:Nullable(DateTime64(3, 'UTC'))} IS NULL OR released_at <= {to:Nullable(DateTime64(3, 'UTC'))})
            ORDER BY released_at DESC, id
            LIMIT {limit:UInt32}`,
    query_params: {
      org: orgId,
      from: q.from ? toClickHouseDateTime64(new Date(q.from)) : null,
      to: q.to ? toClickHouseDateTime64(new Date(q.to)) : null,
      limit: q.limit,
    },
    format: 'JSONEachRow',
  });
  type Row = Omit<Release, 'released_at' | 'created_at'> & { released_at_iso: string; created_at_iso: string };
  return (await rs.json<Row>()).map(({ released_at_iso, created_at_iso, ...r }) => ({ ...r, released_at: trimMicros(released_at_iso), created_at: trimMicros(created_at_iso) }));
}

// DateTime64(3) formats %f with 3 digits in recent versions; keep exactly milliseconds either way.
const trimMicros = (s: string) => s.replace(/\.(\d{3})\d*Z$/, '.$1Z');
