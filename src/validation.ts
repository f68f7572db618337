/**
 * Request-schema helpers shared by the features (valibot). A request body is a JSON object with
 * exactly the documented fields: `[]`, `null` or `[{...}]` where an object is expected, and a
 * misspelt field (`{"filter": [...]}`), are 400s naming them, never silently dropped (a dropped
 * filter would answer with every response of the organization).
 */
import * as v from 'valibot';

/**
 * A strict JSON object: not an array, not null, no field outside `entries`. The JSON Schema
 * (OpenAPI) reads `type: object, additionalProperties: false`.
 */
export function jsonObject<const E extends v.ObjectEntries>(entries: E, what: string) {
  const accepted = Object.keys(entries).join(', ');
  return v.pipe(
    v.custom<Record<string, unknown>>((x) => typeof x === 'object' && x !== null && !Array.isArray(x), `${what} must be a JSON object`),
    v.strictObject(entries, (issue) =>
      issue.expected === 'never' ? `unknown field ${issue.received}; ${what} accepts ${accepted}` : `${what} must be a JSON object`,
    ),
  );
}

/** A field accepted for compatibility and ignored (a dashboard may send the search body to the summary). */
export const ignored = v.optional(v.unknown());

/** The answer of every DELETE route (responses, respondents, users): how many records existed and are now deleted. */
export const deletionResultSchema = v.object({ deleted: v.pipe(v.number(), v.integer(), v.minValue(0)) });
