/**
 * Tombstones of deleted survey responses (schema/040): what the writer checks, kept in memory.
 *
 * The writer drops a record whose updated_at is not after its id's deleted_at. Two reads make that
 * exact without a lookup per id:
 * - before the INSERT, the tombstones this process knows (`known`): loaded per organization at its
 *   first write, kept current by this process's deletions and by every check after an INSERT. It
 *   only spares work (a record it misses is caught by the check after);
 * - after the INSERT, the organization's tombstones with deleted_at at or after the batch's oldest
 *   updated_at (`since`): the only ones that can refuse a record of the batch. A deletion commits
 *   its tombstone before its DELETE, so a deletion whose DELETE ran before this INSERT committed
 *   (and so missed its rows) has its tombstone visible to this check; one whose DELETE ran after
 *   removed the rows itself. The writer takes back what such a deletion refused (store.ts).
 * Both reads name the organization and a time, never the batch's ids: their cost follows the
 * tombstones in play, not the batch.
 *
 * Memory: about 150 bytes per tombstone (two strings and a map entry). An organization with more
 * than MAX_TOMBSTONES_PER_ORG is not kept: its writes look their ids up instead (`lookup`).
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { ParamBag } from '../clickhouse/sql.ts';
import { TenantOrg } from '../clickhouse/tenant.ts';
import { QUERY_SETTINGS } from './compile.ts';

/** Past this many tombstones, an organization's are looked up per batch instead of kept. */
export const MAX_TOMBSTONES_PER_ORG = 100_000;

/** id -> deleted_at (DateTime64(6) text), the latest when an id was deleted more than once. */
export type TombstoneMap = Map<string, string>;

const DT = "DateTime64(6, 'UTC')";

export class Tombstones {
  /** org -> its tombstones, or 'lookup' past the bound. */
  private readonly orgs = new Map<string, TombstoneMap | 'lookup'>();
  private readonly loading = new Map<string, Promise<TombstoneMap | 'lookup'>>();

  constructor(private readonly client: () => ClickHouseClient) {}

  /** The tombstones of these ids this process knows (the org's, read once from the table). */
  async known(orgId: string, ids: readonly string[]): Promise<TombstoneMap> {
    const org = orgId.toLowerCase();
    const kept = this.orgs.get(org) ?? (await this.load(org));
    if (kept === 'lookup') return this.lookup(org, ids);
    const out: TombstoneMap = new Map();
    if (kept.size === 0) return out;
    for (const id of ids) {
      const at = kept.get(id);
      if (at !== undefined) out.set(id, at);
    }
    return out;
  }

  /** The org's tombstones with deleted_at >= `since` (DateTime64(6) text), remembered as well. */
  async since(orgId: string, since: string): Promise<TombstoneMap> {
    const org = orgId.toLowerCase();
    const found = await this.read(org, (bag) => `deleted_at >= ${bag.add(since, DT)}`);
    this.note(org, found);
    return found;
  }

  /** Tombstones this process wrote or read. */
  note(orgId: string, entries: ReadonlyMap<string, string>): void {
    const kept = this.orgs.get(orgId.toLowerCase());
    if (kept === undefined || kept === 'lookup') return; // loaded, with these, on first use
    for (const [id, at] of entries) {
      if ((kept.get(id) ?? '') < at) kept.set(id, at);
    }
    if (kept.size > MAX_TOMBSTONES_PER_ORG) this.orgs.set(orgId.toLowerCase(), 'lookup');
  }

  private load(org: string): Promise<TombstoneMap | 'lookup'> {
    let pending = this.loading.get(org);
    if (!pending) {
      pending = this.read(org, undefined, MAX_TOMBSTONES_PER_ORG + 1).then((all) => {
        const kept = all.size > MAX_TOMBSTONES_PER_ORG ? 'lookup' : all;
        this.orgs.set(org, kept);
        return kept;
      }).finally(() => this.loading.delete(org));
      this.loading.set(org, pending);
    }
    return pending;
  }

  private lookup(org: string, ids: readonly string[]): Promise<TombstoneMap> {
    return ids.length === 0 ? Promise.resolve(new Map()) : this.read(org, (bag) => `id IN ${bag.add(ids, 'Array(UUID)')}`);
  }

  /** The org's tombstones that meet `condition` (all without one). */
  private async read(org: string, condition?: (bag: ParamBag) => string, limit?: number): Promise<TombstoneMap> {
    const bag = new ParamBag();
    const from = new TenantOrg(org, bag).from('survey_response_tombstones');
    const rs = await this.client().query({
      query:
        `SELECT toString(id) AS rid, toString(max(deleted_at)) AS at ${from}${condition ? ` AND ${condition(bag)}` : ''} ` +
        `GROUP BY id${limit ? ` LIMIT ${limit}` : ''}`,
      query_params: bag.toParams(),
      format: 'JSONEachRow',
      clickhouse_settings: QUERY_SETTINGS,
    });
    return new Map((await rs.json<{ rid: string; at: string }>()).map((r) => [r.rid, r.at]));
  }
}
