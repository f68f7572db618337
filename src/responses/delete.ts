/**
 * Deleting survey responses (DELETE /1.0/survey/response/<id>, DELETE /1.0/respondent/<id>):
 * a tombstone per id (schema/040), then a lightweight DELETE of the rows and of their identities,
 * with the rollup slices they were in marked pending before and recomputed after (maintainer.ts),
 * so every read, rollup-served or not, stops counting them as soon as the 202 is sent. The rows
 * leave the disk at the purge that follows (PURGE_DELAY_MS) or when their parts merge.
 */
import type { Database } from '../clickhouse/connection.ts';
import { deleteWhere, purgeDeleted } from '../clickhouse/delete.ts';
import { ParamBag } from '../clickhouse/sql.ts';
import { TenantOrg } from '../clickhouse/tenant.ts';
import { forgetCachedAnswers } from '../query/request-cache.ts';
import type { Logger } from '../log.ts';
import { formatDbMicros } from '../time/iso.ts';
import { QUERY_SETTINGS } from './compile.ts';
import { storedIdentities } from './identity.ts';
import type { RollupMaintainer } from './rollups/maintainer.ts';
import { hourSlicesOf } from './rollups/slices.ts';
import type { Tombstones } from './tombstones.ts';
import { withIdLocks } from './store.ts';

/** Deleted rows are physically removed at most this long after a deletion (while the service runs). */
export const PURGE_DELAY_MS = 60 * 60 * 1000;

export class ResponseDeleter {
  private purgeTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: () => Database,
    private readonly rollups: RollupMaintainer,
    private readonly tombstones: Tombstones,
    private readonly log: Logger,
  ) {}

  /** Deletes these responses of the org; the number that existed. */
  async deleteIds(orgId: string, ids: readonly string[]): Promise<number> {
    const org = orgId.toLowerCase();
    const wanted = [...new Set(ids.map((id) => id.toLowerCase()))];
    if (wanted.length === 0) return 0;
    return withIdLocks(wanted.map((id) => `${org}/${id}`), async () => {
      const db = this.db();
      const client = db.client();
      const known = await storedIdentities(client, org, wanted);
      // A tombstone for every id asked for: a version of it still on its way (a retry, a late
      // import) is not stored after the deletion.
      const deletedAt = formatDbMicros(BigInt(Date.now()) * 1000n + 999n);
      await client.insert({
        table: 'survey_response_tombstones',
        values: wanted.map((id) => ({ org_id: org, id, deleted_at: deletedAt })),
        format: 'JSONEachRow',
      });
      this.tombstones.note(org, new Map(wanted.map((id) => [id, deletedAt])));
      if (known.size === 0) return 0;
      const slices = hourSlicesOf([...known.values()]);
      await this.rollups.mark(org, slices);
      try {
        const ids = (bag: ParamBag) => `id IN ${bag.add([...known.keys()], 'Array(UUID)')}`;
        await deleteWhere(db, 'survey_responses', org, ids);
        await deleteWhere(db, 'survey_response_ids', org, ids);
      } finally {
        this.rollups.written(org, slices);
      }
      // Before the 202: no read that starts after it, on any instance, answers from data cached
      // before the deletion (the deletion generation: src/query/request-cache.ts).
      await forgetCachedAnswers(client);
      this.schedulePurge();
      return known.size;
    });
  }

  /** Deletes every response of a respondent in the org; the number deleted. */
  async deleteRespondent(orgId: string, respondentId: string): Promise<number> {
    const bag = new ParamBag();
    const rs = await this.db().client().query({
      query: `SELECT DISTINCT toString(id) AS rid ${new TenantOrg(orgId, bag).from('survey_responses', { final: true })} AND respondent_id = ${bag.add(respondentId, 'UUID')}`,
      query_params: bag.toParams(),
      format: 'JSONEachRow',
      clickhouse_settings: QUERY_SETTINGS,
    });
    const ids = (await rs.json<{ rid: string }>()).map((r) => r.rid);
    return ids.length === 0 ? 0 : this.deleteIds(orgId, ids);
  }

  /** One purge PURGE_DELAY_MS after the first deletion since the last purge. */
  private schedulePurge() {
    if (this.purgeTimer) return;
    this.purgeTimer = setTimeout(() => {
      this.purgeTimer = undefined;
      const db = this.db();
      Promise.all([purgeDeleted(db, 'survey_responses'), purgeDeleted(db, 'survey_response_ids')]).then(
        () => this.log.info({ msg: 'deleted survey responses purged from disk' }),
        (err) => this.log.warn({ msg: 'purge of deleted survey responses failed; their parts merge them away later', err: String(err) }),
      );
    }, PURGE_DELAY_MS);
    this.purgeTimer.unref();
  }
}
