/**
 * The one source every event read starts from. Like the survey responses' `fromSelection`, the tenant
 * guard is part of the source: `FROM events ... WHERE org_id = <token's org> AND ...`, and every
 * table joined to it (the users' current properties, their current group memberships) is read
 * through the same organization placeholder, so no query can forget it on any table it reads.
 */
import { DT64, type ParamBag } from '../../clickhouse/sql.ts';
import { TenantOrg } from '../../clickhouse/tenant.ts';
import { parseInstantMicros } from '../../time/iso.ts';
import { compileFilters, compileSelectionWhere, type ReadSelection } from '../../query/selection.ts';
import type { CohortNode } from '../analysis/cohort.ts';
import { cohortCondition } from '../analysis/cohort-sql.ts';
import { compileEventFilter } from './compile.ts';
import type { EventFilterNode } from './filters.ts';

/**
 * The days of an instant bound, as a condition on `toDate(timestamp)` for the index analysis only
 * (`indexHint`: the engine prunes granules with it and never evaluates it on a row; it is 1). Every
 * caller writes it beside the same bound on `timestamp`, which implies it, so the answer is the same;
 * it is what lets the engine prune by the sorting key (org_id, toDate(timestamp), ...), which it
 * does not derive from a condition on `timestamp` alone. Evaluated on each row, the two day bounds
 * cost a scan of the 10M events ~40 ms of engine CPU of ~400 for nothing (bench/events/README.md,
 * 2026-11-27 11:10; the same granules selected).
 */
export const daysFrom = (instant: string, bag: ParamBag) => `indexHint(toDate(timestamp) >= toDate(${bag.add(dateRange(instant), DT64)}))`;
export const daysTo = (instant: string, bag: ParamBag) => `indexHint(toDate(timestamp) <= toDate(${bag.add(dateRange(instant), DT64)}))`;

/** 2149-06-06, the last day a Date holds, in µs since the epoch. */
const LAST_DATE_MICROS = 65_535n * 86_400_000_000n;

/**
 * An instant brought into what `toDate` holds (1970-01-01..2149-06-06) for the day hint: outside
 * it the engine's toDate wraps, and the index analysis pruned every granule (a range starting in
 * 1900, which the API takes, read no event; one ending after 2149-06-06 neither). Clamped, the
 * hint still holds for every stored event, and the bound on `timestamp` beside it decides.
 */
function dateRange(instant: string): string {
  const micros = parseInstantMicros(instant);
  if (micros === null) return instant;
  if (micros < 0n) return '1970-01-01 00:00:00.000000';
  return micros > LAST_DATE_MICROS ? '2149-06-06 00:00:00.000000' : instant;
}

/** The selection of an event read: organization, filters, range on `timestamp`, and a feedback cohort (src/events/analysis/cohort.ts). */
export type EventSelection = ReadSelection<EventFilterNode> & { cohort?: CohortNode };

/**
 * A read of the events of one organization. Built once per query on its ParamBag: the org
 * placeholder is created here and reused by every joined table.
 */
export class EventSource {
  readonly org: TenantOrg;
  constructor(readonly selection: EventSelection, readonly bag: ParamBag) {
    this.org = new TenantOrg(selection.orgId, bag);
  }

  /** The WHERE expression: org first, the cohort's users, the range's days, then the timestamp range, then the filters joined by filtersBool. */
  where(): string {
    const cohortEvents = (selection: EventSelection) => new EventSource(selection, this.bag).from();
    const extra = this.selection.cohort ? [cohortCondition(this.selection.orgId, this.selection.cohort, this.bag, cohortEvents)] : [];
    const { start, end } = this.selection.range ?? {};
    if (start !== undefined) extra.push(daysFrom(start, this.bag));
    if (end !== undefined) extra.push(daysTo(end, this.bag));
    return compileSelectionWhere(this.selection, this.bag, { org: this.org, table: 'events', time: 'timestamp', extra, filter: (f) => compileEventFilter(f, this) });
  }

  /** The filters alone, joined by filtersBool in parentheses (undefined without filters). */
  filtersSql(): string | undefined {
    return compileFilters(this.selection, (f) => compileEventFilter(f, this));
  }

  /** `FROM events [joins] WHERE <selection>`; `joins` come from the methods below. */
  from(joins: readonly string[] = []): string {
    return `FROM events${joins.map((j) => ` ${j}`).join('')} WHERE ${this.where()}`;
  }

  /** The users of this organization whose current value of property `keyParam` satisfies `cond` (an expression of `value`, the raw JSON). */
  usersWithProperty(keyParam: string, cond: string): string {
    return `SELECT user_id ${this.org.from('user_properties', { final: true })} AND key = ${keyParam} AND ${cond}`;
  }

  /** The users of this organization currently in one of the groups (an Array(UUID) placeholder). */
  usersInGroups(groupIdsParam: string): string {
    return `SELECT user_id ${this.org.from('group_memberships', { final: true })} AND has(${groupIdsParam}, group_id)`;
  }

  /** One user's current properties: rows {key, value (raw JSON)}. */
  propertiesOfUser(userParam: string): string {
    return `SELECT key, value ${this.org.from('user_properties', { final: true })} AND user_id = ${userParam} ORDER BY key`;
  }

  /** One user's current groups: rows {group_id, group_type, group_name}. */
  groupsOfUser(userParam: string): string {
    return (
      `SELECT group_id, group_type, group_name ${this.org.from('group_memberships', { final: true })} ` +
      `AND user_id = ${userParam} ORDER BY group_type, group_name`
    );
  }

  /** LEFT JOIN of each user's current value of a property, as column `column` ('' for none). */
  joinUserProperty(keyParam: string, column: string): string {
    return `LEFT JOIN (SELECT user_id, value AS ${column} ${this.org.from('user_properties', { final: true })} AND key = ${keyParam}) AS ${column}_j USING (user_id)`;
  }

  /** LEFT JOIN of each user's current group names of one type, as Array(String) column `column` ([] for none). */
  joinGroupNames(groupTypeParam: string, column: string): string {
    return (
      `LEFT JOIN (SELECT user_id, groupArray(group_name) AS ${column} ${this.org.from('group_memberships', { final: true })} ` +
      `AND group_type = ${groupTypeParam} GROUP BY user_id) AS ${column}_j USING (user_id)`
    );
  }
}
