/**
 * Request-schema helpers shared by the features (valibot). A request body is a JSON object with
 * exactly the documented fields: `[]`, `null` or `[{...}]` where an object is expected, and a
 * misspelt field (`{"filter": [...]}`), are 400s naming them, never silently dropped (a dropped
 * filter would answer with every response of the organization).
 */
import * as v from 'valibot';

/**
 * On the guard of a jsonObject: the schema that describes it in JSON Schema (server/openapi.ts).
 * The converter reads a pipe's input type from its first schema, the guard, which has none.
 */
export const JSON_SCHEMA_OF: unique symbol = Symbol('tallyhouse.jsonSchemaOf');

/**
 * A strict JSON object: not an array, not null, no field outside `entries`. The JSON Schema
 * (OpenAPI) reads `type: object, additionalProperties: false`.
 */
export function jsonObject<const E extends v.ObjectEntries>(entries: E, what: string) {
  const strict = v.strictObject(entries, strictMessage(what, entries));
  // valibot's object schemas take an array as an object with no members; the guard refuses it first.
  const guard = v.custom<Record<string, unknown>>((x) => typeof x === 'object' && x !== null && !Array.isArray(x), `${what} must be a JSON object`);
  Object.defineProperty(guard, JSON_SCHEMA_OF, { value: strict });
  return v.pipe(guard, strict);
}

/**
 * The message of an object schema's own issues: a required member that is absent is named
 * (`group_by is required`; valibot's default reads "Invalid key: Expected ... but received
 * undefined"), anything else is `<what> must be a JSON object`.
 */
const objectMessage =
  (what: string) =>
  (issue: v.BaseIssue<unknown>): string => {
    const key = issue.path?.at(-1)?.key;
    return issue.received === 'undefined' && typeof key === 'string' ? `${key} is required` : `${what} must be a JSON object`;
  };

/**
 * The message of a strict object schema's own issues: an unknown field is named with the fields
 * `what` accepts (`unknown field "foo"; a filter accepts key, operator, ...`), the rest as
 * objectMessage. For a strict object that cannot be a jsonObject (a variant's option).
 */
export const strictMessage = (what: string, entries: v.ObjectEntries) => {
  const accepted = Object.keys(entries).join(', ');
  return (issue: v.BaseIssue<unknown>): string =>
    issue.expected === 'never' ? `unknown field ${issue.received}; ${what} accepts ${accepted}` : objectMessage(what)(issue);
};

/**
 * A strict query string (server/app.ts also refuses a parameter given twice): a parameter outside
 * `entries` is a 400 naming it and the ones `what` takes (`unknown query parameter "foo"; GET
 * /1.0/release takes from, to, limit`). Values arrive as strings.
 */
export function queryObject<const E extends v.ObjectEntries>(entries: E, what: string) {
  const accepted = Object.keys(entries).join(', ');
  return v.strictObject(entries, (issue) => (issue.expected === 'never' ? `unknown query parameter ${issue.received}; ${what} takes ${accepted}` : `${what}: invalid query string`));
}

/** A field accepted for compatibility and ignored (a dashboard may send the search body to the summary). */
export const ignored = v.optional(v.unknown());

/** The answer of every DELETE route (responses, respondents, users): how many records existed and are now deleted. */
export const deletionResultSchema = v.object({ deleted: v.pipe(v.number(), v.integer(), v.minValue(0)) });
