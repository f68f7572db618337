/**
 * Selection compilation (the rows a request reads), the same for every guarded source of the query language (survey responses,
 * events): the tenant guard first, then the feature's own conditions (e.g. the path's survey
 * list), the inclusive range on the feature's time column, then the filters joined by
 * filters_bool in parentheses. Each feature compiles its own filter nodes (its key catalogue) and
 * names its table; the organization (a TenantOrg, src/clickhouse/tenant.ts) is made once per
 * query, so every table a source reads (joins, sub-selects) is guarded by the same placeholder.
 */
import { DT64, type ParamBag } from '../clickhouse/sql.ts';

/** The parameter type of the range bounds (defined with the parameters, clickhouse/sql.ts). */
export { DT64 };
import type { TenantOrg, TenantTable } from '../clickhouse/tenant.ts';


/** The selection of a read: the token's organization, the body's filters and range. */
export interface ReadSelection<F> {
  orgId: string;
  filtersBool: 'AND' | 'OR';
  filters: readonly F[];
  /** Inclusive DateTime64(6) texts (rangeSchema). */
  range?: { start?: string; end?: string };
}

export interface SelectionColumns<F> {
  /** The organization (src/clickhouse/tenant.ts), made by the caller so that joined tables reuse its placeholder. */
  org: TenantOrg;
  /** The tenant table the selection reads. */
  table: TenantTable;
  /** The time column the range applies to (a column name from code). */
  time: string;
  /** The feature's conditions between the guard and the range (from code; values as placeholders). */
  extra?: readonly string[];
  /** One filter node -> its SQL condition (the feature's compiler). */
  filter: (node: F) => string;
}

/** The WHERE expression (without the keyword). */
export function compileSelectionWhere<F>(selection: ReadSelection<F>, bag: ParamBag, columns: SelectionColumns<F>): string {
  const parts = [columns.org.condition(columns.table), ...(columns.extra ?? [])];
  if (selection.range?.start !== undefined) parts.push(`${columns.time} >= ${bag.add(selection.range.start, DT64)}`);
  if (selection.range?.end !== undefined) parts.push(`${columns.time} <= ${bag.add(selection.range.end, DT64)}`);
  const filters = compileFilters(selection, columns.filter);
  if (filters !== undefined) parts.push(filters);
  return parts.join(' AND ');
}

/** The filters joined by filters_bool, in parentheses; undefined without filters. */
export function compileFilters<F>(selection: Pick<ReadSelection<F>, 'filters' | 'filtersBool'>, filter: (node: F) => string): string | undefined {
  if (selection.filters.length === 0) return undefined;
  return `(${selection.filters.map(filter).join(selection.filtersBool === 'OR' ? ' OR ' : ' AND ')})`;
}
