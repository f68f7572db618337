/**
 * The hidden-field matching rules, written independently of the compiler (src/responses/compile.ts),
 * as the integration tests' reference: a string entry matches by text, a number entry by value (a
 * numeric string counts), a bool entry by truth ("true"/"false" count).
 */
export interface HiddenFieldEntry {
  key: string;
  t: 0 | 1 | 2;
  v_s?: string;
  v_b?: boolean;
  v_d?: number;
}

const NUMERIC = /^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$/;
export const asNumber = (x: unknown) => (typeof x === 'number' ? x : typeof x === 'string' && NUMERIC.test(x) ? Number(x) : undefined);
export const asBool = (x: unknown) => (typeof x === 'boolean' ? x : x === 'true' ? true : x === 'false' ? false : undefined);
export const asText = (x: unknown) => (typeof x === 'string' ? x : String(x));

/** Does the entry equal the filter value `x`? */
export function entryEq(e: HiddenFieldEntry, x: unknown): boolean {
  if (e.t === 0) return e.v_s === asText(x);
  if (e.t === 2) return asNumber(x) !== undefined && e.v_d === asNumber(x);
  return asBool(x) !== undefined && e.v_b === asBool(x);
}
