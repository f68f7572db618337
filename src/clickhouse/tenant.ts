/**
 * The tenant guard: the only module that writes an organization condition into SQL. Every table
 * below holds the rows of many organizations (column `org_id`, the first of its sorting key and,
 * on a cluster, the sharding key's input), and a request may read or change only its token's. A
 * query of one of them takes its head (`FROM <table> [FINAL] ... WHERE org_id = <org>`) or, for a
 * DELETE or an INSERT ... SELECT, its condition from here, with the organization as a query
 * parameter, so no query of a tenant table is built without it. test/unit/tenant-guard.test.ts
 * fails on an organization condition written anywhere else in src/, and on a table of the schema
 * with an `org_id` column that is missing from this list.
 *
 * `api_tokens` is the one table read across organizations (authentication finds a token by its
 * hash before any organization is known): it is no tenant table, and its one organization
 * condition, the optional narrowing of a listing, is `tokensOfOrg` below.
 */
import type { ParamBag } from './sql.ts';

/** The tables whose rows belong to one organization each (schema/, column `org_id`: UUID, LowCardinality(UUID) in survey_responses since schema/281). */
export const TENANT_TABLES = [
  'events',
  'user_properties',
  'group_memberships',
  'releases',
  'survey_responses',
  'survey_response_ids',
  'survey_response_tombstones',
  'survey_rollup',
  'survey_rollup_answers',
  'survey_rollup_pending',
  'idempotency_keys',
  'event_user_numbers',
] as const;
export type TenantTable = (typeof TENANT_TABLES)[number];

/** The table read across organizations: API tokens, found by hash before the organization is known. */
export const CROSS_ORG_TABLE = 'api_tokens';

/** What comes between `FROM <table>` and `WHERE`, in the engine's order. All of it SQL from code. */
export interface TenantHead {
  /** Read the last version of each row (Replacing/Collapsing tables). */
  final?: boolean;
  /** `ARRAY JOIN ...` / `LEFT JOIN ...` clauses, in order. */
  joins?: readonly string[];
  /** A PREWHERE condition. */
  prewhere?: string;
}

/**
 * One organization in one query. Its placeholder is added to the query's ParamBag once, so every
 * tenant table the query reads (joins, sub-selects, the branches of a UNION) is guarded by the
 * same parameter.
 */
export class TenantOrg {
  /** The organization's placeholder, `{pN:UUID}`: also what an INSERT ... SELECT writes as `org_id`. */
  readonly param: string;

  constructor(readonly orgId: string, bag: ParamBag) {
    this.param = bag.add(orgId, 'UUID');
  }

  /** `FROM <table> [FINAL] [joins] [PREWHERE ...] WHERE org_id = <org>`: callers append ` AND ...`, GROUP BY, ORDER BY. */
  from(table: TenantTable, head: TenantHead = {}): string {
    const joins = (head.joins ?? []).map((j) => ` ${j}`).join('');
    const prewhere = head.prewhere ? ` PREWHERE ${head.prewhere}` : '';
    return `FROM ${table}${head.final ? ' FINAL' : ''}${joins}${prewhere} WHERE ${this.condition(table)}`;
  }

  /**
   * `org_id = <org>`, the condition alone: for a DELETE (`deleteWhere`), and for a WHERE whose
   * head a caller must shape itself. `table` is the tenant table the condition applies to.
   */
  condition(table: TenantTable): string {
    void table;
    return `org_id = ${this.param}`;
  }
}

/**
 * `org_id IN <orgs>`: the condition of a statement over several organizations' rows at once
 * (a group commit of events from several tokens, its claims).
 */
export function orgsCondition(table: TenantTable, orgIds: readonly string[], bag: ParamBag): string {
  void table;
  return `org_id IN ${bag.add([...orgIds], 'Array(UUID)')}`;
}

/** The api_tokens condition of a listing: one organization's tokens, or every token when `orgId` is undefined. */
export function tokensOfOrg(orgId: string | undefined, bag: ParamBag): string {
  const org = bag.add(orgId ?? null, 'Nullable(UUID)');
  return `(${org} IS NULL OR org_id = ${org})`;
}
