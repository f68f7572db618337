/**
 * What each structure of `events` costs the engine per INSERT and per merge (issue 21, item 3):
 * scratch tables built from `events`' own definition (SHOW CREATE TABLE), each with one structure
 * taken away (a projection, a column, the block-number column, the sorting key, the codecs, the
 * skip index), and the same RowBinary bodies of large INSERTs written into each, one INSERT at a
 * time, merges stopped. Then one OPTIMIZE FINAL per table merges what its INSERTs wrote.
 * Per variant: engine CPU per row of the INSERTs (system.query_log ProfileEvents, user + system
 * time) and of the merge (the OPTIMIZE query's, which runs it), and its bytes on disk; `- X` minus `full` is what X
 * costs. Variants run interleaved, `--rounds` times (median), so a load change hits them alike.
 *
 * `--orgs`: the organizations each INSERT's requests (batches of 100) are spread over, as in the
 * service's flushes; known users carry dense numbers per organization, as the service sends them.
 *
 *   node --import tsx bench/ingest/structures.ts [--rows 10000] [--orgs 16] [--inserts 8] [--rounds 3] [--only REGEX]
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { insertEvents } from '../../src/events/ingest.ts';
import { parseFlags, positiveInt } from '../lib/args.ts';
import { REPO_ROOT } from '../lib/machine.ts';
import { startService } from '../lib/service.ts';
import { prepareInserts } from './direct.ts';
import { generatePool } from './events.ts';

const USAGE = 'usage: node --import tsx bench/ingest/structures.ts [--rows 10000] [--orgs 16] [--inserts 8] [--rounds 3] [--only REGEX]';
const flags = parseFlags(process.argv.slice(2), { rows: { type: 'string' }, orgs: { type: 'string' }, inserts: { type: 'string' }, rounds: { type: 'string' }, only: { type: 'string' } }, USAGE);
const rowsPerInsert = positiveInt('rows', flags.rows, 10_000);
const orgsPerInsert = positiveInt('orgs', flags.orgs, 16);
const insertsPerVariant = positiveInt('inserts', flags.inserts, 8);
const rounds = positiveInt('rounds', flags.rounds, 3);
const only = new RegExp(flags.only ?? '.');
const log = (line: string) => process.stderr.write(`[structures] ${line}\n`);
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

/** A variant: its name and how its CREATE TABLE text differs from `events`'. */
interface Variant {
  name: string;
  edit(create: string): string;
}

/** `s` without `, PROJECTION <name> (...) [WITH SETTINGS (...)]` (parentheses matched). */
const dropProjection = (name: string) => (s: string) => {
  const at = s.search(new RegExp(`,\\s*PROJECTION ${name}\\s*\\(`));
  if (at < 0) return s;
  const closing = (open: number) => {
    let depth = 0;
    for (let i = open; i < s.length; i++) {
      if (s[i] === '(') depth++;
      else if (s[i] === ')' && --depth === 0) return i + 1;
    }
    throw new Error(`unbalanced projection ${name}`);
  };
  let end = closing(s.indexOf('(', at));
  const settings = /^\s*WITH SETTINGS\s*\(/.exec(s.slice(end));
  if (settings) end = closing(end + settings[0].length - 1);
  return s.slice(0, at) + s.slice(end);
};

/** A structure of main before schema/140-141, from its migration's text: added back as a variant. */
const schemaText = (file: string) => readFileSync(join(REPO_ROOT, 'schema', file), 'utf8');
const PROPERTY_VALUES_JSON = /ADD COLUMN IF NOT EXISTS (property_values JSON MATERIALIZED [\s\S]*?);\n/.exec(schemaText('090-event-read-structures.sql'))![1];
const USER_WEEKS = /ADD PROJECTION IF NOT EXISTS (event_user_weeks\s*\([\s\S]*?\));\n/.exec(schemaText('091-event-read-projections.sql'))![1];
const addColumn = (definition: string) => (s: string) => s.replace(/,\n(\s*)INDEX /, `,\n$1${definition},\n$1INDEX `);
const addProjection = (definition: string) => (s: string) => s.replace(/\n\)\nENGINE = /, `,\n    PROJECTION ${definition}\n)\nENGINE = `);

/** `s` with one more table setting (or one changed, when it is already set). */
const withSetting = (name: string, value: string) => (s: string) => {
  const set = new RegExp(`(\\b${name} = )[^,\\n]*`);
  return set.test(s) ? s.replace(set, `$1${value}`) : s.replace(/(\nSETTINGS [^\n]*)/, `$1, ${name} = ${value}`);
};

const VARIANTS: Variant[] = [
  { name: 'full', edit: (s) => s },
  // The INSERT still sends the column; EPHEMERAL takes it and stores nothing.
  { name: '- property_map (sent, not stored)', edit: (s) => s.replace(/(`?property_map`? Map\(String, String\)) DEFAULT [^\n]*,\n/, '$1 EPHEMERAL,\n') },
  { name: '- property_map buckets (merged parts keep the plain Map form)', edit: (s) => s.replace(/map_serialization_version = 'with_buckets'/, "map_serialization_version = 'basic'") },
  { name: '- event_counts', edit: dropProjection('event_counts') },
  { name: '- event_times', edit: dropProjection('event_times') },
  { name: '- message_key (sent, not stored)', edit: (s) => s.replace(/(`?message_key`? FixedString\(16\)) DEFAULT [^\n]*?(CODEC\(NONE\))?,\n/, '$1 EPHEMERAL,\n') },
  { name: '- block number column', edit: (s) => s.replace(/enable_block_number_column = 1/, 'enable_block_number_column = 0') },
  { name: '- idx_user_id (bloom)', edit: (s) => s.replace(/,\s*INDEX idx_user_id [^\n,]*GRANULARITY 1/, '') },
  { name: '- codecs (LZ4 everywhere)', edit: (s) => s.replace(/ CODEC\((?:[^()]|\([^()]*\))*\)/g, '') },
  { name: 'ZSTD(1) for the ZSTD(3) text columns', edit: (s) => s.replace(/ZSTD\(3\)/g, 'ZSTD(1)') },
  { name: 'LZ4 for the ZSTD(3) text columns', edit: (s) => s.replace(/ CODEC\(ZSTD\(3\)\)/g, '') },
  { name: 'LZ4 for the ZSTD text columns (ZSTD(1) and (3))', edit: (s) => s.replace(/(String) CODEC\(ZSTD\([13]\)\)/g, '$1') },
  // The two ZSTD columns schema/220 left (message_id: on every event of the closed loop; received_at).
  { name: 'LZ4 for message_id', edit: (s) => s.replace(/(`?message_id`? String) CODEC\(ZSTD\(1\)\)/, '$1 CODEC(LZ4)') },
  { name: 'LZ4 for message_id and received_at', edit: (s) => s.replace(/(`?message_id`? String) CODEC\(ZSTD\(1\)\)/, '$1 CODEC(LZ4)').replace(/(`?received_at`? DateTime64\(3, 'UTC'\)) CODEC\(ZSTD\(1\)\)/, '$1 CODEC(LZ4)') },
  { name: 'LZ4 for message_id, T64 + LZ4 for received_at', edit: (s) => s.replace(/(`?message_id`? String) CODEC\(ZSTD\(1\)\)/, '$1 CODEC(LZ4)').replace(/(`?received_at`? DateTime64\(3, 'UTC'\)) CODEC\(ZSTD\(1\)\)/, '$1 CODEC(T64, LZ4)') },
  { name: '- sorting key (ORDER BY org_id, day)', edit: (s) => s.replace(/ORDER BY \(org_id, toDate\(timestamp\), type, event_name, user_id, timestamp\)/, 'ORDER BY (org_id, toDate(timestamp))') },
  { name: '+ property_values (schema/090: JSON MATERIALIZED from the text)', edit: addColumn(PROPERTY_VALUES_JSON) },
  { name: '+ event_user_weeks (schema/091)', edit: addProjection(USER_WEEKS) },
  { name: 'main before schema/140-141 (+ property_values, + event_user_weeks)', edit: (s) => addProjection(USER_WEEKS)(addColumn(PROPERTY_VALUES_JSON)(s)) },
  // Dense per-organization user numbers (bench/events/README.md, unique users): the number
  // stands in for one the write path would assign and send (4 bytes a row); the hash here keeps its
  // range (the data set's 100k users) at the cost of computing it at INSERT.
  // Dense user numbers (schema/230-232): the bitmaps of each (organization, hour), the number in
  // event_times, and the column (sent, not stored, when the table goes without it).
  { name: '- event_user_hours', edit: dropProjection('event_user_hours') },
  { name: '- user_num in event_times', edit: (s) => s.replace(/(PROJECTION event_times\s*\(\s*SELECT\s[^)]*?user_id,)\s*user_num,/, '$1') },
  {
    name: '- dense user numbers (no event_user_hours, user_num sent, not stored)',
    edit: (s) =>
      dropProjection('event_user_hours')(s)
        .replace(/(PROJECTION event_times\s*\(\s*SELECT\s[^)]*?user_id,)\s*user_num,/, '$1')
        .replace(/(`?user_num`? UInt32) DEFAULT 0,?\n/, (m, col: string) => `${col} EPHEMERAL${m.trimEnd().endsWith(',') ? ',' : ''}\n`),
  },
  // Per-part settings of the engine's defaults (system.merge_tree_settings) that cost CPU at
  // every INSERT or merge whatever the columns hold.
  { name: '- automatic statistics (auto_statistics_types)', edit: withSetting('auto_statistics_types', "''") },
  { name: '- sparse serialization', edit: withSetting('ratio_of_defaults_for_sparse_serialization', '1') },
  { name: '- marks and primary key compression', edit: (s) => withSetting('compress_primary_key', '0')(withSetting('compress_marks', '0')(s)) },
  { name: '- substream marks in compact parts', edit: withSetting('write_marks_for_substreams_in_compact_parts', '0') },
  { name: 'compact parts up to 100 MB', edit: withSetting('min_bytes_for_wide_part', '104857600') },
  { name: 'wide parts only', edit: withSetting('min_bytes_for_wide_part', '0') },
  {
    name: 'none of the read structures (no property_map, no projection)',
    edit: (s) => [(t: string) => t.replace(/(`?property_map`? Map\(String, String\)) DEFAULT [^\n]*,\n/, '$1 EPHEMERAL,\n'), dropProjection('event_counts'), dropProjection('event_times')].reduce((t, f) => f(t), s),
  },
];

interface Measure { insertUs: number; mergeUs: number; bytes: number; insertSysUs: number; allocMbPerInsert: number }

async function rowsOf<T>(client: ClickHouseClient, query: string, params: Record<string, unknown> = {}): Promise<T[]> {
  return (await client.query({ query, query_params: params, format: 'JSONEachRow' })).json<T>();
}

/** The CREATE TABLE of events, renamed, with `edit` applied; the edit must change it (but for `full`). */
function variantDdl(create: string, variant: Variant, table: string): string {
  const edited = variant.edit(create);
  if (variant.name !== 'full' && edited === create) throw new Error(`variant "${variant.name}" changed nothing in the CREATE TABLE of events: the bench's edit is stale:\n${create}`);
  return edited.replace(/^CREATE TABLE [\w.`]+/, `CREATE TABLE ${table}`);
}

async function measure(client: ClickHouseClient, ddl: string, table: string, bodies: Buffer[], rows: number): Promise<Measure> {
  await client.command({ query: `DROP TABLE IF EXISTS ${table} SYNC` });
  await client.command({ query: ddl });
  await client.command({ query: `SYSTEM STOP MERGES ${table}` });
  const from = Date.now();
  for (const body of bodies) await insertEvents(client, [body], table);
  await client.command({ query: `SYSTEM START MERGES ${table}` });
  // The merge runs inside the OPTIMIZE query: its CPU is that query's (system.query_log).
  const optimizeId = crypto.randomUUID();
  await client.command({ query: `OPTIMIZE TABLE ${table} FINAL`, query_id: optimizeId, clickhouse_settings: { optimize_throw_if_noop: 0 } });
  await client.command({ query: 'SYSTEM FLUSH LOGS' });
  const database = (await rowsOf<{ d: string }>(client, 'SELECT currentDatabase() AS d'))[0].d;
  const cpu = "ProfileEvents['UserTimeMicroseconds'] + ProfileEvents['SystemTimeMicroseconds']";
  const [ins] = await rowsOf<{ us: string; n: string; sys: string; alloc: string }>(client,
    `SELECT sum(${cpu}) AS us, count() AS n, sum(ProfileEvents['SystemTimeMicroseconds']) AS sys, sum(ProfileEvents['MemoryAllocatedWithoutCheckBytes']) AS alloc FROM system.query_log WHERE type = 'QueryFinish' AND query_kind = 'Insert' ` +
    `AND has(tables, {t:String}) AND event_time_microseconds >= fromUnixTimestamp64Milli({from:Int64})`,
    { t: `${database}.${table}`, from });
  if (Number(ins.n) !== bodies.length) throw new Error(`query_log has ${ins.n} INSERTs into ${table}, expected ${bodies.length}`);
  const [merge] = await rowsOf<{ us: string; n: string }>(client,
    `SELECT sum(${cpu}) AS us, count() AS n FROM system.query_log WHERE type = 'QueryFinish' AND query_id = {id:String}`, { id: optimizeId });
  if (Number(merge.n) !== 1) throw new Error(`query_log has no OPTIMIZE of ${table}`);
  const [size] = await rowsOf<{ b: string }>(client, `SELECT sum(bytes_on_disk) AS b FROM system.parts WHERE database = {d:String} AND table = {t:String} AND active`, { d: database, t: table });
  await client.command({ query: `DROP TABLE ${table} SYNC` });
  return {
    insertUs: Number(ins.us) / rows,
    mergeUs: Number(merge.us) / rows,
    bytes: Number(size.b) / rows,
    insertSysUs: Number(ins.sys) / rows,
    allocMbPerInsert: Number(ins.alloc) / bodies.length / 1e6,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const svc = await startService({ embeddedOnly: true, log });
try {
  const client = svc.client;
  const create = (await rowsOf<{ statement: string }>(client, 'SHOW CREATE TABLE events'))[0].statement;
  const pool = generatePool(64);
  const prepared = prepareInserts(pool.batches, Array.from({ length: orgsPerInsert }, () => crypto.randomUUID()), rowsPerInsert).slice(0, insertsPerVariant);
  const bodies = prepared.map((p) => p.body);
  const rows = prepared.reduce((s, p) => s + p.rows, 0);
  const variants = VARIANTS.filter((v) => v.name === 'full' || only.test(v.name));
  const ddls = variants.map((v, i) => variantDdl(create, v, `events_structure_${i}`));
  log(`${variants.length} variants x ${rounds} rounds, ${bodies.length} INSERTs of ${rowsPerInsert} rows of ${orgsPerInsert} organizations each | load ${load()}`);
  // Unmeasured: warms the engine.
  await measure(client, ddls[0], 'events_structure_warmup', bodies.slice(0, 2), 2 * rowsPerInsert).catch(() => undefined);
  const results = variants.map(() => [] as Measure[]);
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < variants.length; i++) {
      results[i].push(await measure(client, ddls[i], `events_structure_${i}`, bodies, rows));
      const m = results[i].at(-1)!;
      log(`round ${r + 1} ${variants[i].name}: insert ${m.insertUs.toFixed(1)} µs/row (system ${m.insertSysUs.toFixed(1)}, ${m.allocMbPerInsert.toFixed(1)} MB allocated an INSERT), merge ${m.mergeUs.toFixed(1)} µs/row | load ${load()}`);
    }
  }
  const full = { insert: median(results[0].map((m) => m.insertUs)), merge: median(results[0].map((m) => m.mergeUs)), bytes: median(results[0].map((m) => m.bytes)) };
  const lines = [
    `| variant | INSERT µs/row | of which system | MB allocated an INSERT | merge µs/row | INSERT + merge | its share of full's INSERT + merge | bytes/row on disk |`,
    `|---|---:|---:|---:|---:|---:|---:|---:|`,
  ];
  variants.forEach((v, i) => {
    const ins = median(results[i].map((m) => m.insertUs));
    const mer = median(results[i].map((m) => m.mergeUs));
    const bytes = median(results[i].map((m) => m.bytes));
    const share = i === 0 ? '' : `${(((full.insert + full.merge) - (ins + mer)) / (full.insert + full.merge) * 100).toFixed(0)} %`;
    const sys = median(results[i].map((m) => m.insertSysUs));
    const alloc = median(results[i].map((m) => m.allocMbPerInsert));
    lines.push(`| ${v.name} | ${ins.toFixed(1)} | ${sys.toFixed(1)} | ${alloc.toFixed(1)} | ${mer.toFixed(1)} | ${(ins + mer).toFixed(1)} | ${share} | ${bytes.toFixed(0)} |`);
  });
  process.stdout.write(`${lines.join('\n')}\n\nload average at the end: ${load()}\n`);
} finally {
  await svc.stop();
}
