/**
 * Builds parameterised ClickHouse SQL. Values only ever travel as `query_params`
 * (`{p0:String}` placeholders); identifiers come from allow-lists in the callers.
 */
export interface CompiledQuery {
  readonly sql: string;
  readonly params: Readonly<Record<string, unknown>>;
}

/**
 * Runs one compiled query and returns its rows. A read's sequence of queries (search, aggregation)
 * takes one, so that the service (its client, its cache) and the query bench (its timing and
 * engine figures) run exactly the same sequence.
 */
export type RunQuery = <T>(q: CompiledQuery) => Promise<T[]>;

export class ParamBag {
  private readonly values: Record<string, unknown> = {};
  private next = 0;

  /** Adds a value and returns its placeholder, e.g. `{p0:String}`. `type` is a ClickHouse type literal from code, never from input. */
  add(value: unknown, type: string): string {
    const name = `p${this.next++}`;
    this.values[name] = value;
    return `{${name}:${type}}`;
  }

  toParams(): Readonly<Record<string, unknown>> {
    return Object.freeze({ ...this.values });
  }
}

export function compiled(sql: string, params: ParamBag | Record<string, unknown>): CompiledQuery {
  const p = params instanceof ParamBag ? params.toParams() : Object.freeze({ ...params });
  return Object.freeze({ sql, params: p });
}

/** 'YYYY-MM-DD hh:mm:ss.mmm' in UTC: the text a DateTime64(3, 'UTC') parameter or JSONEachRow field takes. */
export function toClickHouseDateTime64(date: Date): string {
  const iso = date.toISOString(); // 'YYYY-MM-DDThh:mm:ss.mmmZ'
  return iso.slice(0, -14) + ' ' + iso.slice(-13, -1);
}
