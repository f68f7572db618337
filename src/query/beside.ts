/**
 * A small read sent in the same engine request as a read's main query, instead of a request of its
 * own beside it (a date histogram's releases beside its grouped query): one round trip, one query
 * for the engine to parse, plan and log, instead of two competing for the cores at once.
 *
 * Both queries name their result columns, each of a type a NULL can stand in for (numbers,
 * strings, enums, UUIDs: not an Array, Map or Tuple), so they travel as the branches of one
 * UNION ALL, told apart by a `beside_row` column:
 * `(SELECT 0 AS beside_row, <main columns>, NULL AS <beside columns> FROM (<main>))
 *  UNION ALL (SELECT 1, NULL..., <beside columns> FROM (<beside>))`.
 * The result names its columns too, so the rollup reads' pending set can still ride as the first
 * branch (rollups/pending.ts checkedSql). Each branch keeps its own rows and their values; only
 * the order between branches is unspecified (a caller that needs the beside rows in an order sorts
 * them: BesideRead.rows' `order`).
 *
 * A main query that does not name its columns cannot carry it: the small read is then sent alone,
 * at that moment, so it still runs beside the main query, as before.
 */
import type { CompiledQuery, RunQuery } from '../clickhouse/sql.ts';

/** A query whose result columns are named (see above for the types they may have). */
export interface NamedQuery extends CompiledQuery {
  readonly columns?: readonly string[];
}

export const BESIDE_ROW = 'beside_row';

/** The two queries in one (their placeholders must not collide: the beside one's ParamBag has its own prefix). */
export function besideSql(main: NamedQuery & { columns: readonly string[] }, beside: NamedQuery & { columns: readonly string[] }): NamedQuery & { columns: readonly string[] } {
  const clash = Object.keys(beside.params).find((p) => p in main.params);
  if (clash !== undefined) throw new Error(`beside read: parameter ${clash} in both queries`);
  const both = main.columns.find((c) => beside.columns.includes(c) || c === BESIDE_ROW);
  if (both !== undefined) throw new Error(`beside read: column ${both} in both queries`);
  const nulls = (cols: readonly string[]) => cols.map((c) => `NULL AS ${c}`);
  const first = `SELECT 0 AS ${BESIDE_ROW}, ${[...main.columns, ...nulls(beside.columns)].join(', ')} FROM (${main.sql})`;
  const second = `SELECT 1 AS ${BESIDE_ROW}, ${[...nulls(main.columns), ...beside.columns].join(', ')} FROM (${beside.sql})`;
  return Object.freeze({ sql: `(${first}) UNION ALL (${second})`, params: { ...main.params, ...beside.params }, columns: [BESIDE_ROW, ...main.columns, ...beside.columns] });
}

/**
 * One small read of a request, carried by the main query when it can be (attach), else sent alone.
 * rows() gives its rows from the last request that carried it, or from its own request, sent at
 * the latest when the main query was: awaiting rows() after the main rows adds no round trip.
 *
 * Use: `q = beside.attach(main)`, run q, `beside.split(rows)` on what that run returned (for a read
 * that retries, the last attach's run), then `await beside.rows()`.
 */
export class BesideRead<B extends Record<string, unknown>> {
  private own: Promise<B[]> | undefined;
  private carried: B[] | undefined;
  /** Whether the last attach() put this read in the main query. */
  private inLast = false;

  /** `query`: the small read; `alone`: how it is sent on its own. */
  constructor(private readonly query: NamedQuery & { columns: readonly string[] }, private readonly alone: RunQuery) {}

  /**
   * The main query to send: with this read in it when `main` names its columns (its rows then go
   * through split), else `main` as is and this read sent alone, now (once).
   */
  attach(main: NamedQuery): NamedQuery {
    this.inLast = main.columns !== undefined;
    if (main.columns) return besideSql(main as NamedQuery & { columns: readonly string[] }, this.query);
    if (!this.own) {
      this.own = this.alone<B>(this.query);
      // Awaited by rows(); when the main query fails first, nobody does: not an unhandled rejection.
      this.own.catch(() => undefined);
    }
    return main;
  }

  /** The rows of the last attach()'s query -> the main query's rows; this read's are kept for rows(). */
  split<R>(rows: readonly unknown[]): R[] {
    if (!this.inLast) return rows as R[];
    const main: R[] = [];
    const mine: B[] = [];
    for (const row of rows as Record<string, unknown>[]) {
      if (Number(row[BESIDE_ROW]) === 1) mine.push(pick(row, this.query.columns) as B);
      else main.push(omit(row, [BESIDE_ROW, ...this.query.columns]) as R);
    }
    this.carried = mine;
    return main;
  }

  /** This read's rows: those the last combined request carried, or its own request's (sent now if it was not yet). */
  rows(): Promise<B[]> {
    if (this.carried) return Promise.resolve(this.carried);
    return (this.own ??= this.alone<B>(this.query));
  }
}

function pick(row: Record<string, unknown>, columns: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const c of columns) out[c] = row[c];
  return out;
}

function omit(row: Record<string, unknown>, columns: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k in row) if (!columns.includes(k)) out[k] = row[k];
  return out;
}
