/**
 * The one source every read of `releases` starts from: `FROM releases WHERE org_id = <token's
 * org>`, so no query of the table can forget the organization (as the survey responses'
 * fromSelection and the events' EventSource). Callers append `AND ...` conditions or ORDER BY.
 */
import { DT64, type ParamBag } from '../clickhouse/sql.ts';
import { TenantOrg } from '../clickhouse/tenant.ts';

export const RELEASE_COLUMNS = 'toString(id) AS id, name, description, version, tags, released_at, created_at';

/**
 * `FROM releases WHERE org_id = ...`, and released_at within [from, to] (DateTime64(6) texts,
 * inclusive, compared at microseconds: nothing is rounded) when given.
 */
export function fromReleases(orgId: string, bag: ParamBag, window: { from?: string; to?: string } = {}): string {
  const org = new TenantOrg(orgId, bag);
  const parts = [org.from('releases')];
  if (window.from !== undefined) parts.push(`released_at >= ${bag.add(window.from, DT64)}`);
  if (window.to !== undefined) parts.push(`released_at <= ${bag.add(window.to, DT64)}`);
  return parts.join(' AND ');
}
