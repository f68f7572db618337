/**
 * The INSERT of survey responses as RowBinary (src/clickhouse/rowbinary.ts): each record written
 * straight from its parsed form to the row's bytes, with the values toResponseRow (record.ts)
 * defines, column for column. The engine reads binary values instead of parsing JSON text; the
 * service builds no row objects and no JSON but the `doc` (stored-doc.ts). An integration test
 * (test/integration/response-encode.test.ts) stores random records both ways and compares.
 */
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { Readable } from 'node:stream';
import { RowBinaryWriter } from '../clickhouse/rowbinary.ts';
import { COMPLETION_VALUES } from './filters.ts';
import { NIL_UUID } from '../uuid.ts';
import { answerScore, answerText, answerValue, type ResponseRecord } from './record.ts';
import { docRemainder } from './stored-doc.ts';

/** The columns written, in the order of the bytes (the others are DEFAULT or MATERIALIZED). */
export const RESPONSE_COLUMNS = [
  'org_id', 'survey_id', 'created_at', 'id', 'updated_at', 'channel_id', 'respondent_id', 'respondent_aliases', 'scenario_id', 'language', 'locale',
  'group_ids', 'completion', 'active', 'end_reason', 'ended_at', 'last_answer_at', 'hf_keys', 'hf_types', 'hf_strings', 'hf_bools', 'hf_numbers',
  'ans_question_ids', 'ans_cta_types', 'ans_values', 'ans_scores', 'answer_text', 'doc',
] as const;

const COMPLETION_CODE = new Map<string, number>(COMPLETION_VALUES.map((c, i) => [c, i]));

/**
 * DateTime64(6) ticks of an API timestamp (`YYYY-MM-DDTHH:MM:SS.ffffffZ`, the parsed form) or of
 * its DateTime64(6) text (`YYYY-MM-DD HH:MM:SS.ffffff`, apiToDb): the fields sit at the same places.
 */
export function micros(api: string): bigint {
  const ms = Date.UTC(+api.slice(0, 4), +api.slice(5, 7) - 1, +api.slice(8, 10), +api.slice(11, 13), +api.slice(14, 16), +api.slice(17, 19));
  return BigInt(ms / 1000) * 1_000_000n + BigInt(+api.slice(20, 26));
}

function stringArray(w: RowBinaryWriter, values: readonly string[]): void {
  w.varint(values.length);
  for (const s of values) w.string(s);
}

/** Nullable(DateTime64(6)): NULL for "" and null, as toResponseRow's dbOrNull. */
function optionalTime(w: RowBinaryWriter, api: string | null | undefined): void {
  if (!api) return w.uint8(1);
  w.uint8(0);
  w.int64(micros(api));
}

/**
 * Rows encoded one request at a time, so that a group write reuses them: row i is
 * `bytes[i === 0 ? 0 : ends[i - 1], ends[i])`.
 */
export interface EncodedRows {
  bytes: Buffer;
  ends: Uint32Array;
}

/** One row of RESPONSE_COLUMNS per record, for the org. */
export function encodeResponses(records: readonly ResponseRecord[], orgId: string): Buffer {
  return encodeRows(records, orgId).bytes;
}

/** The body of an INSERT picked from encoded rows: adjacent rows of one buffer go as one chunk. */
export class RowRuns {
  readonly chunks: Buffer[] = [];
  private from: EncodedRows | undefined;
  private start = 0;
  private end = 0;

  /** Row i of `rows`. */
  add(rows: EncodedRows, i: number): void {
    const start = i === 0 ? 0 : rows.ends[i - 1];
    if (this.from === rows && this.end === start) {
      this.end = rows.ends[i];
      return;
    }
    this.flush();
    this.from = rows;
    this.start = start;
    this.end = rows.ends[i];
  }

  /** Bytes of rows encoded on their own. */
  addBytes(bytes: Buffer): void {
    this.flush();
    this.chunks.push(bytes);
  }

  /** Ends the run being built; `chunks` is then the whole body. */
  flush(): this {
    if (this.from) this.chunks.push(this.from.bytes.subarray(this.start, this.end));
    this.from = undefined;
    return this;
  }
}

/** One row of RESPONSE_COLUMNS per record, for the org, with where each row ends. */
export function encodeRows(records: readonly ResponseRecord[], orgId: string): EncodedRows {
  const w = new RowBinaryWriter(records.length * 2048);
  const ends = new Uint32Array(records.length);
  for (let i = 0; i < records.length; i++) {
    writeRow(w, records[i], orgId);
    ends[i] = w.length;
  }
  return { bytes: w.finish(), ends };
}

function writeRow(w: RowBinaryWriter, r: ResponseRecord, orgId: string): void {
  const hidden = r.hidden_fields ?? [];
  const answers = r.answers ?? [];
  w.uuid(orgId);
  w.uuid(r.survey_id);
  w.int64(micros(r.created_at));
  w.uuid(r.id);
  w.int64(micros(r.updated_at));
  w.uuid(r.channel_id);
  w.uuid(r.respondent_id);
  stringArray(w, r.respondent_aliases ?? []);
  w.uuid(r.scenario_id ?? NIL_UUID);
  w.string(r.language ?? '');
  w.string(r.locale ?? '');
  const groups = r.group_ids ?? [];
  w.varint(groups.length);
  for (const g of groups) w.uuid(g);
  w.uint8(COMPLETION_CODE.get(r.completion)!);
  w.bool(r.active);
  w.string(r.end_reason ?? '');
  optionalTime(w, r.ended_at);
  optionalTime(w, r.last_answer_at);
  w.varint(hidden.length);
  for (const h of hidden) w.string(h.key);
  w.varint(hidden.length);
  for (const h of hidden) w.uint8(h.t);
  w.varint(hidden.length);
  for (const h of hidden) w.string(h.v_s ?? '');
  w.varint(hidden.length);
  for (const h of hidden) w.bool(h.v_b ?? false);
  w.varint(hidden.length);
  for (const h of hidden) w.float64(h.v_d ?? 0);
  w.varint(answers.length);
  for (const a of answers) w.string(a.question_correlation_id);
  w.varint(answers.length);
  for (const a of answers) w.string(a.cta_type);
  w.varint(answers.length);
  for (const a of answers) w.string(answerValue(a));
  w.varint(answers.length);
  for (const a of answers) {
    const score = answerScore(a);
    if (score === null) w.uint8(1);
    else {
      w.uint8(0);
      w.float64(score);
    }
  }
  w.string(answerText(answers));
  w.string(JSON.stringify(docRemainder(r, orgId)));
}

const INSERT_RESPONSES = `INSERT INTO survey_responses (${RESPONSE_COLUMNS.join(', ')}) FORMAT RowBinary`;

/**
 * One INSERT of encoded rows (in order, as one body); resolves once the engine has committed them.
 * `oneRowPerId`: the caller sends at most one row per response id, so the insert-time collapse of
 * ReplacingMergeTree (optimize_on_insert: a merge pass over every column of the block) would find
 * nothing to collapse and is skipped. Readers do not depend on it: FINAL always merges a part
 * written without it (level 0), and `tallyhouse seed` writes so too.
 */
export async function insertEncoded(client: ClickHouseClient, rows: Buffer | readonly Buffer[], oneRowPerId = false): Promise<void> {
  await insertRowBinary(client, INSERT_RESPONSES, Buffer.isBuffer(rows) ? [rows] : rows, {
    // One part per week touched (schema/004 partitions by week): a batch of up to 1000
    // records spread over years would pass the default limit of 100 partitions.
    max_partitions_per_insert_block: '1000',
    ...(oneRowPerId ? { optimize_on_insert: 0 } : {}),
  });
}

/** Runs `query` (an INSERT ... FORMAT RowBinary) with these bytes as its rows; resolves once committed. */
export async function insertRowBinary(client: ClickHouseClient, query: string, chunks: readonly Buffer[], settings: ClickHouseSettings = {}): Promise<void> {
  const result = await client.exec({
    query,
    values: Readable.from(chunks, { objectMode: false }),
    clickhouse_settings: { wait_end_of_query: 1, ...settings },
  });
  // An INSERT answers with an empty body; read it to the end so the socket goes back to the pool.
  for await (const _ of result.stream);
}
