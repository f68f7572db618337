/**
 * The fast path of `POST /1.0/survey/response`: the record schema of record-schema.ts, checked by hand in
 * one walk of the parsed body, building the same output (same keys, same order, same values).
 *
 * valibot stays the contract: it feeds the OpenAPI document and words every 400. This walk only
 * answers "the schema accepts this batch, and here is its output" or "ask the schema" (undefined):
 * a batch it does not accept goes through valibot, so an error reads word for word as the schema
 * says it. A property test (test/unit/responses-record-fast.test.ts) holds the two to the same
 * verdict and output. Why: the schema's walk allocates a dataset per value and costs ~4x this one
 * (bench/responses-write/README.md).
 *
 * It answers "ask the schema" for what valibot accepts in shapes this walk does not rebuild: an
 * array where the schema wants an object (valibot reads it as an object with index keys).
 */
import { charCount } from '../chars.ts';
import { formatApi, ISO_8601_PATTERN, parseIsoMicros } from '../time/iso.ts';
import { COMPLETION_VALUES } from './filters.ts';
import { MAX_BATCH, type ResponseRecord } from './record-schema.ts';
import { UUID_PATTERN } from '../uuid.ts';

/** Thrown inside the walk when the schema must decide; never leaves this module. */
const ASK = Symbol('ask the schema');
type Json = unknown;
type Obj = Record<string, Json>;

const fail = (): never => {
  throw ASK;
};

const isObject = (x: Json): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);

function uuid(x: Json): string {
  return typeof x === 'string' && UUID_PATTERN.test(x) ? x : fail();
}

/** A string of at most `max` characters (code points, as maxChars counts them). */
function text(x: Json, max: number): string {
  if (typeof x !== 'string') return fail();
  return x.length <= max || charCount(x) <= max ? x : fail();
}

/**
 * record-schema.ts's `timestamp`: the API form. Text already in that form (`YYYY-MM-DDTHH:MM:SS.ffffffZ`
 * of a storable year) is its own output, as formatApi(parseIsoMicros(text)) would give.
 */
function timestamp(x: Json): string {
  if (typeof x !== 'string') return fail();
  if (x.length === 27 && x.charCodeAt(10) === 84 /* T */ && x.charCodeAt(19) === 46 /* . */ && x.charCodeAt(26) === 90 /* Z */ &&
      x >= '1900' && x < '2300' && ISO_8601_PATTERN.test(x)) return x;
  const t = parseIsoMicros(x);
  return t ? formatApi(t) : fail();
}

const optionalTimestamp = (x: Json): string => (x === '' ? '' : timestamp(x));

function array(x: Json, max: number): Json[] {
  return Array.isArray(x) && x.length <= max ? x : fail();
}

/** An optional member: absent stays absent; present, `check` gives its output. */
function put(out: Obj, input: Obj, key: string, check: (x: Json) => Json): void {
  if (key in input) out[key] = check(input[key]);
}

const nullable = (check: (x: Json) => Json) => (x: Json) => (x === null ? null : check(x));
const finiteNumber = (x: Json): number => (typeof x === 'number' && Number.isFinite(x) ? x : fail());
const bool = (x: Json): boolean => (typeof x === 'boolean' ? x : fail());

/** t, v_s, v_b, v_d in that order; `vsAlongside`: answers may carry v_s beside the typed member. */
function valueMembers(out: Obj, input: Obj, vsAlongside: boolean): void {
  const t = 't' in input ? input.t : fail();
  if (t !== 0 && t !== 1 && t !== 2) fail();
  out.t = t;
  put(out, input, 'v_s', (x) => text(x, 10_000));
  put(out, input, 'v_b', bool);
  put(out, input, 'v_d', finiteNumber);
  // typedValueProblem (record-schema.ts): the member t names is there, and no other but v_s beside it in an answer.
  const wanted = t === 0 ? 'v_s' : t === 1 ? 'v_b' : 'v_d';
  if (out[wanted] === undefined) fail();
  if (t !== 0 && out.v_s !== undefined && !vsAlongside) fail();
  if (t !== 1 && out.v_b !== undefined) fail();
  if (t !== 2 && out.v_d !== undefined) fail();
}

function hiddenField(x: Json): Obj {
  if (!isObject(x)) return fail();
  const out: Obj = {};
  const key = 'key' in x ? text(x.key, 255) : fail();
  if (key.length < 1) fail();
  out.key = key;
  valueMembers(out, x, false);
  return out;
}

function translation(x: Json): Json {
  if (typeof x === 'string') return text(x, 10_000);
  if (!isObject(x)) return fail();
  // v.record(v.string(), v.unknown()): own keys but these three, values as they are.
  const out: Obj = {};
  for (const k in x) {
    if (Object.prototype.hasOwnProperty.call(x, k) && k !== '__proto__' && k !== 'prototype' && k !== 'constructor') out[k] = x[k];
  }
  return out;
}

function answer(x: Json): Obj {
  if (!isObject(x)) return fail();
  const out: Obj = {};
  valueMembers(out, x, true);
  out.cta_type = 'cta_type' in x ? text(x.cta_type, 100) : fail();
  put(out, x, 'key', (k) => text(k, 255));
  out.question_id = 'question_id' in x ? uuid(x.question_id) : fail();
  out.question_correlation_id = 'question_correlation_id' in x ? uuid(x.question_correlation_id) : fail();
  put(out, x, 'action_id', nullable(uuid));
  put(out, x, 'action_correlation_id', nullable(uuid));
  put(out, x, 'answer_id', nullable(uuid));
  put(out, x, 'tags', nullable((t) => array(t, 100).map((tag) => text(tag, 255))));
  put(out, x, 'lang', nullable((l) => text(l, 64)));
  put(out, x, 'translations', (t) => array(t, 100).map(translation));
  put(out, x, 'time', timestamp);
  return out;
}

const emotion = nullable(finiteNumber);

function emotions(x: Json): Obj {
  if (!isObject(x)) return fail();
  const out: Obj = {};
  for (const k of ['fear', 'sadness', 'anger', 'joy']) put(out, x, k, emotion);
  return out;
}

const required = (input: Obj, key: string): Json => (key in input ? input[key] : fail());

function responseRecord(x: Json, orgId: string): ResponseRecord {
  if (!isObject(x)) return fail();
  const out: Obj = {};
  out.id = uuid(required(x, 'id'));
  put(out, x, 'doc_type', (d) => (d === 'response' ? d : fail()));
  // Another organization's id is a 400 of parseResponseBatch's own.
  put(out, x, 'org_id', (o) => (uuid(o).toLowerCase() === orgId ? o : fail()));
  out.channel_id = uuid(required(x, 'channel_id'));
  out.respondent_id = uuid(required(x, 'respondent_id'));
  put(out, x, 'respondent_aliases', (a) => array(a, 100).map((s) => text(s, 1000)));
  out.survey_id = uuid(required(x, 'survey_id'));
  put(out, x, 'scenario_id', uuid);
  put(out, x, 'language', (s) => text(s, 64));
  put(out, x, 'locale', (s) => text(s, 64));
  put(out, x, 'question_id_path', (s) => text(s, 1000));
  put(out, x, 'question_correlation_id_path', (s) => text(s, 1000));
  put(out, x, 'action_id_path', (s) => text(s, 1000));
  put(out, x, 'action_correlation_id_path', (s) => text(s, 1000));
  put(out, x, 'group_ids', (a) => array(a, 1000).map(uuid));
  put(out, x, 'hidden_fields', (a) => array(a, 200).map(hiddenField));
  put(out, x, 'emotions', nullable(emotions));
  put(out, x, 'answers', (a) => array(a, 500).map(answer));
  const completion = required(x, 'completion');
  out.completion = (COMPLETION_VALUES as readonly Json[]).includes(completion) ? completion : fail();
  out.active = bool(required(x, 'active'));
  put(out, x, 'end_reason', (s) => text(s, 100));
  put(out, x, 'ended_at', nullable(optionalTimestamp));
  out.created_at = timestamp(required(x, 'created_at'));
  out.updated_at = timestamp(required(x, 'updated_at'));
  put(out, x, 'last_answer_at', nullable(optionalTimestamp));
  // The record's two checks (record-schema.ts): an active response has no end reason and no end.
  if (out.active && (out.end_reason || out.ended_at)) fail();
  return out as unknown as ResponseRecord;
}

/**
 * The batch's records as responseBatchSchema outputs them, when the schema accepts the batch and
 * no record names another organization; undefined otherwise (then the schema decides).
 */
export function fastParseBatch(body: unknown, orgId: string): ResponseRecord[] | undefined {
  if (!Array.isArray(body) || body.length < 1 || body.length > MAX_BATCH) return undefined;
  const org = orgId.toLowerCase();
  try {
    return body.map((x) => responseRecord(x, org));
  } catch (err) {
    if (err === ASK) return undefined;
    throw err;
  }
}
