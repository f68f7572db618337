import { invalid } from '../errors.ts';

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

/**
 * The parameter type of every instant (range bounds, window starts, cursor positions, slice
 * starts): µs in UTC, the type of every time column, so a comparison never converts the column.
 * Its text is formatDb / formatDbMicros (src/time/iso.ts).
 */
export const DT64 = "DateTime64(6, 'UTC')";

/**
 * Parameters travel in the body of the engine's HTTP request (multipart/form-data: the client's
 * `use_multipart_params_auto`, set in database.ts), not in its URL, which the engine caps at
 * 1 MiB (30 filters of 1000 UUIDs failed with "URI too long"). The engine still caps each form
 * field at 131,072 bytes ("Field value too long": one alias `in` of 200 values of 1000 chars), so
 * no single parameter may pass this bound; arrays are split below it (ParamBag.add).
 */
export const MAX_PARAM_BYTES = 100_000;

/** An upper bound of a value's size as a parameter's text (JSON escapes at least as much as the client's format). */
function paramBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value) * 2 + 2;
  if (Array.isArray(value)) return value.reduce<number>((n, x) => n + paramBytes(x) + 1, 2);
  if (typeof value === 'bigint') return value.toString().length;
  return value === null || value === undefined ? 4 : Buffer.byteLength(JSON.stringify(value)) * 2;
}

function splitBySize(values: readonly unknown[]): unknown[][] {
  const parts: unknown[][] = [[]];
  let size = 2;
  for (const x of values) {
    const bytes = paramBytes(x) + 1;
    if (size + bytes > MAX_PARAM_BYTES && parts[parts.length - 1].length > 0) {
      parts.push([]);
      size = 2;
    }
    parts[parts.length - 1].push(x);
    size += bytes;
  }
  return parts;
}

/**
 * The LIKE pattern matching every string that contains `text`: LIKE's own metacharacters
 * (`%`, `_` and the escape `\\`) escaped, so the pattern means the substring and nothing else.
 */
export function likeContaining(text: string): string {
  return `%${text.replace(/[\\%_]/g, '\\$&')}%`;
}

export class ParamBag {
  private readonly values: Record<string, unknown> = {};
  private next = 0;

  /** `prefix` names the placeholders (`{<prefix>0:...}`): two bags with different prefixes never collide. */
  constructor(private readonly prefix = 'p') {}

  /**
   * Adds a value and returns its placeholder, e.g. `{p0:String}`. `type` is a ClickHouse type
   * literal from code, never from input. An array whose text would pass the engine's cap on one
   * parameter is split over several parameters joined with arrayConcat (same value, same type).
   */
  add(value: unknown, type: string): string {
    if (Array.isArray(value) && type.startsWith('Array(') && paramBytes(value) > MAX_PARAM_BYTES) {
      return `arrayConcat(${splitBySize(value).map((part) => this.addOne(part, type)).join(', ')})`;
    }
    if (paramBytes(value) > MAX_PARAM_BYTES) throw invalid(`A value of ${paramBytes(value)} bytes is too large for one query parameter (at most ${MAX_PARAM_BYTES})`);
    return this.addOne(value, type);
  }

  private addOne(value: unknown, type: string): string {
    const name = `${this.prefix}${this.next++}`;
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
