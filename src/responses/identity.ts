/**
 * The identity of a response (its survey_id and created_at, fixed by its first write), kept in
 * the narrow key table `survey_response_ids` (schema/030) and decided by the rule of the claims
 * module (src/claims/claims.ts): of several claims of one id, the first committed wins.
 *
 * A write batch (`agree`; one group of requests, write-group.ts), on one server:
 *   1. asks the process's claim view about its ids: an id the view does not hold was never
 *      claimed up to the view's watermark (certain), so only the others (upserts, and the view's
 *      false positives) are looked up, by (org_id, id), one point read each;
 *   2. refuses a request with a record that moves a response to another survey (a 400 for it;
 *      its ids are not claimed);
 *   3. claims the ids found nowhere, each with its first record's identity and the batch's claim
 *      UUID (schema/070), adding them to the view first;
 *   4. advances the view: reads the claims other writers committed after the watermark of step 1
 *      (by block number, never by key). An id of its own claimed there too was claimed by two
 *      writers at once: it is looked up, and whoever committed first gives the identity both use.
 * With one writer, step 1 reads only the upserts and step 4 only the block number of its own part.
 * Cluster mode (no view: block numbers are per shard): every id is looked up, the new ones claimed
 * and read back.
 *
 * Memory: the view's filter, about 6 bytes per claimed id (CLAIM_FILTER_MAX_BYTES caps it; past
 * it more ids are looked up, never fewer).
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { randomUUID } from 'node:crypto';
import { claimKey, ClaimView, type ClaimTable, type ClaimViewOptions } from '../claims/claims.ts';
import { RowBinaryWriter } from '../clickhouse/rowbinary.ts';
import { ParamBag } from '../clickhouse/sql.ts';
import { insertRowBinary, micros } from './encode.ts';
import { TenantOrg } from '../clickhouse/tenant.ts';
import { QUERY_SETTINGS } from './compile.ts';

export interface Identity {
  survey_id: string;
  /** DateTime64(6) text. */
  created_at: string;
}

/** Response-id claims: survey_response_ids, keyed by MD5 of `org_id:id` (claimKey), computed where read. */
export const RESPONSE_ID_CLAIMS: ClaimTable = {
  table: 'survey_response_ids',
  key: "MD5(concat(toString(org_id), ':', toString(id)))",
  isClaim: '1',
  // Identities never expire: no window, one generation of the filter.
  claimedAt: "toDateTime64(0, 3, 'UTC')",
  rowId: 'claim',
  rowIdNamesWrite: true,
  scope: 'org_id',
};

/** The claim view of response ids (one per process: every write batch shares it). */
export function responseIdView(options: ClaimViewOptions): ClaimView {
  return new ClaimView(RESPONSE_ID_CLAIMS, options);
}

/**
 * The identity of those ids the org already has. When an id has several claims (two writers
 * raced on its first write), the first committed one (smallest `_block_number`, see schema/030)
 * is the identity; the rest of the tuple only makes ties deterministic.
 */
export async function storedIdentities(client: ClickHouseClient, orgId: string, ids: readonly string[]): Promise<Map<string, Identity>> {
  if (ids.length === 0) return new Map();
  const bag = new ParamBag();
  const rs = await client.query({
    query:
      // Aliases differ from the column names: a ClickHouse alias would otherwise shadow the column in WHERE.
      'SELECT toString(id) AS rid, argMin((toString(survey_id), toString(created_at)), (_block_number, created_at, survey_id)) AS first ' +
      `${new TenantOrg(orgId, bag).from('survey_response_ids')} AND id IN ${bag.add(ids, 'Array(UUID)')} GROUP BY id`,
    query_params: bag.toParams(),
    format: 'JSONEachRow',
    clickhouse_settings: QUERY_SETTINGS,
  });
  const rows = await rs.json<{ rid: string; first: [string, string] }>();
  return new Map(rows.map((r) => [r.rid, { survey_id: r.first[0], created_at: r.first[1] }]));
}

/**
 * Steps 1-4 of the header for the batch's ids (lower case, each with its first record's identity):
 * the identity every writer of them agrees on. `refuse` sees the identities known before anything
 * is claimed, and returns the ids of the records it refuses (a 400 for their request): those are
 * not claimed.
 */
export async function agree(
  client: ClickHouseClient,
  view: ClaimView,
  orgId: string,
  wanted: ReadonlyMap<string, Identity>,
  refuse: (known: ReadonlyMap<string, Identity>) => Iterable<string>,
): Promise<Map<string, Identity>> {
  const org = orgId.toLowerCase();
  const ordered = view.ordered;
  if (ordered) await view.ready(client);
  const from = view.watermark;
  const keys = new Map([...wanted.keys()].map((id) => [id, claimKey(org, id)]));
  const maybe = ordered ? [...wanted.keys()].filter((id) => view.mayHold(keys.get(id)!)) : [...wanted.keys()];
  const known = await storedIdentities(client, orgId, maybe);
  const claims = new Map([...wanted].filter(([id]) => !known.has(id)));
  for (const id of refuse(new Map([...known, ...claims]))) claims.delete(id);
  if (claims.size === 0) return known;
  const claim = randomUUID();
  if (ordered) for (const id of claims.keys()) view.add(keys.get(id)!, 0);
  await insertClaims(client, orgId, claims, claim);
  if (!ordered) {
    for (const [id, identity] of await storedIdentities(client, orgId, [...claims.keys()])) known.set(id, identity);
    return known;
  }
  const { own, others } = await view.advance(client, [claim], from);
  // The batch's own part is read after its commit; not finding it means something deleted its
  // claims meanwhile, and the order against other writers is unknown: a 503, the retry decides afresh.
  if (!own.has(claim)) throw new Error('response identities: the batch could not find its own claims after its INSERT');
  const byKey = new Map([...keys].map(([id, key]) => [key.toString('latin1'), id]));
  const contested = [...new Set(others.map((c) => byKey.get(c.key.toString('latin1'))).filter((id): id is string => id !== undefined && claims.has(id)))];
  const first = await storedIdentities(client, orgId, contested);
  for (const [id, identity] of claims) known.set(id, first.get(id) ?? identity);
  return known;
}

const INSERT_CLAIMS = 'INSERT INTO survey_response_ids (org_id, id, survey_id, created_at, claim) FORMAT RowBinary';

/** The claims of these ids (lower case) with their identities, as one INSERT of the batch's claim UUID. */
async function insertClaims(client: ClickHouseClient, orgId: string, claims: ReadonlyMap<string, Identity>, claim: string): Promise<void> {
  const w = new RowBinaryWriter(claims.size * 72);
  for (const [id, identity] of claims) {
    w.uuid(orgId);
    w.uuid(id);
    w.uuid(identity.survey_id);
    w.int64(micros(identity.created_at));
    w.uuid(claim);
  }
  await insertRowBinary(client, INSERT_CLAIMS, [w.finish()]);
}
