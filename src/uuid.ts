/**
 * UUIDs as the API and the tables take them. UUID_PATTERN is valibot's, the pattern of every
 * schema's v.uuid(), so a check written by hand (a path segment, a cursor, a CLI argument, the
 * fast parser of response records) accepts exactly what a schema accepts.
 */
import * as v from 'valibot';

/** A UUID, any case. */
export const UUID_PATTERN = v.UUID_REGEX;

/** The nil UUID: what a UUID column holds for "none" (a response without scenario, an event without group). */
export const NIL_UUID = '00000000-0000-0000-0000-000000000000';
