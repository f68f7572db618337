import { expect } from 'chai';
import fc from 'fast-check';
import { RowBinaryReader } from '../../src/clickhouse/rowbinary.ts';
import { DomainError } from '../../src/errors.ts';
import { encodeEventBatch, EVENT_COLUMNS, fastEncode, isoMillis, messageKey, type EventChunk } from '../../src/events/encode.ts';
import { NIL_UUID, propertyMapValue, toEventRows, type EventRow } from '../../src/events/rows.ts';
import { COPILOT_EVENT_NAMES, EVENT_TYPES, MAX_CHARS, parseEventBatch } from '../../src/events/schema.ts';
import { formatDbDate, parseIsoMillis } from '../../src/time/iso.ts';

const ORG = '7f9c0a52-3d1e-4b6a-9c2f-0e8d1a2b3c4d';
const RECEIVED = new Date('2026-11-22T10:00:00.250Z');
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const UUIDS = new Set(['org_id', 'event_id', 'user_id', 'group_id']);
const TIMES = new Set(['received_at', 'timestamp']);

/** The chunk's rows read back, in EventRow's shape, with each row's message key. */
function decode(chunk: EventChunk): (EventRow & { message_key: string })[] {
  return decodeWithMaps(chunk).rows;
}

/** decode, and each row's property_map as [key, value] entries. */
function decodeWithMaps(chunk: EventChunk): { rows: (EventRow & { message_key: string })[]; maps: [string, string][][] } {
  const r = new RowBinaryReader(chunk.body);
  const rows: (EventRow & { message_key: string })[] = [];
  const maps: [string, string][][] = [];
  while (!r.done) {
    const row: Record<string, unknown> = {};
    for (const column of EVENT_COLUMNS) {
      if (UUIDS.has(column)) row[column] = r.uuid();
      else if (TIMES.has(column)) row[column] = formatDbDate(new Date(Number(r.int64())));
      else if (column === 'seq') row[column] = r.uint16();
      else if (column === 'anonymous') row[column] = r.uint8();
      else if (column === 'message_key') row[column] = r.bytes(16).toString('hex');
      // Written by the flush, not the encoder (src/events/user-numbers.ts).
      else if (column === 'user_num') r.bytes(4);
      else if (column === 'property_map') maps.push(Array.from({ length: r.varint() }, () => [r.string(), r.string()]));
      else row[column] = r.string();
    }
    rows.push(row as unknown as EventRow & { message_key: string });
  }
  return { rows, maps };
}

/** The property_map entries of a row's properties (JSON text), by rows.ts's rule. */
const mapOf = (properties: string): [string, string][] =>
  Object.entries(JSON.parse(properties) as Record<string, unknown>).flatMap(([k, v]) => {
    const value = propertyMapValue(v);
    return value === undefined ? [] : [[k, value] as [string, string]];
  });

/** No lone surrogates: the body reader refuses them before any route sees them. */
const wellFormed = (s: string) => (s as string & { isWellFormed(): boolean }).isWellFormed();

/** A string of about `max` characters, astral ones included: one side or the other of the limit. */
const nearLimit = (max: number) => fc.string({ unit: 'binary', minLength: Math.max(0, max - 2), maxLength: max + 2 }).filter(wellFormed);
const text = (max: number) =>
  fc.oneof(
    { weight: 8, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 8 }).filter(wellFormed) },
    { weight: 1, arbitrary: fc.constant('') },
    { weight: max > 1000 ? 1 : 2, arbitrary: nearLimit(max) },
  );
/** A field's value: absent, null, a string, or something else. */
const field = (max: number) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 8, arbitrary: text(max) },
    { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.boolean(), fc.constant([]), fc.constant({})) },
  );

const timestamp = fc.oneof(
  fc.date({ min: new Date('2026-11-10T00:00:00Z'), max: new Date('2026-11-23T00:00:00Z'), noInvalidDate: true }).chain((d) =>
    fc.constantFrom(
      d.toISOString(),
      d.toISOString().replace('Z', '+02:00'),
      d.toISOString().replace('Z', '-11:30'),
      d.toISOString().replace('Z', ''),
      d.toISOString().replace('.', ',').replace('Z', 'z'),
      d.toISOString().replace('T', ' '),
      d.toISOString().replace('T', 't'),
      d.toISOString().slice(0, 19) + 'Z',
      d.toISOString().slice(0, 16) + 'Z',
      d.toISOString().slice(0, 10),
      d.toISOString().replace('Z', '123456Z'),
      d.toISOString().replace('Z', '1234567Z'),
      d.toISOString().replace('.', '.5').replace('Z', '1234567Z'),
      d.toISOString().replace('Z', '+0530'),
      d.toISOString().replace('Z', '+05'),
      d.toISOString().replace('Z', '+24:00'),
    ),
  ),
  fc.constantFrom('2024-02-29T10:00:00Z', '2023-02-29T10:00:00Z', '2100-02-29T00:00:00Z', '2000-02-29T00:00:00Z', '2026-04-31T00:00:00Z', '2026-11-22T24:00:00Z', '2026-11-22T23:60:00Z', '0099-01-01T00:00:00Z', 'x026-11-22T10:00:00Z', '2026-1a-22T10:00:00Z', 'yesterday', ''),
  fc.constant(null),
  fc.constant(undefined),
  fc.integer(),
);

const properties = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 6, arbitrary: fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }) },
  // Any text in keys and values (control characters, quotes, backslashes, DEL, non-ASCII): the
  // encoder writes plain ASCII text itself and leaves the rest to JSON.stringify.
  {
    weight: 3,
    arbitrary: fc.dictionary(
      fc.string({ unit: 'binary', maxLength: 6 }).filter(wellFormed),
      fc.oneof(
        fc.string({ unit: 'binary', maxLength: 8 }).filter(wellFormed),
        fc.constantFrom('', 'a"b', 'a\\b', '\x7f', '\u0001', '\u001f', ' ~', 'é', '\u2028', '😀'),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.boolean(),
        fc.constant(null),
        fc.jsonValue({ maxDepth: 1 }),
      ),
      { maxKeys: 5 },
    ),
  },
  { weight: 1, arbitrary: fc.constant({}) },
  { weight: 1, arbitrary: fc.constant({ big: 'x'.repeat(32 * 1024) }) },
  { weight: 1, arbitrary: fc.oneof(fc.constant([1, 2]), fc.constant('{}'), fc.integer()) },
);

/** Locales real clients send, and texts that are not of the form (schema.ts LOCALE_PATTERN). */
const LOCALES = ['en', 'en-US', 'pt-BR', 'zh-Hant-TW', 'en_US', 'es-419', 'de-CH-1996', 'EN-us', 'English', 'e', 'en-', 'en US', 'en-US.UTF-8', '12', 'en--US', 'en-abcdefghi', 'C'];
/** Zone names real clients send, and texts that are not of the form (TIMEZONE_PATTERN). */
const ZONES = ['UTC', 'Europe/Paris', 'America/Argentina/Buenos_Aires', 'Etc/GMT+5', 'Etc/GMT-14', 'EST5EDT', 'America/Port-au-Prince', '+05:00', 'GMT+5:30', 'Eastern Standard Time', 'Europe//Paris', '/UTC', 'UTC/', '5/Paris', 'Europe/Paris '];
/** A locale or zone: of the form or not, a 64-character one, or any field value. */
const formField = (names: string[], long: string) =>
  fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...names, long, `${long}x`) }, { weight: 3, arbitrary: fc.stringMatching(/^[A-Za-z0-9_/+.: -]{0,12}$/) }, { weight: 3, arbitrary: field(MAX_CHARS.locale) });

const context = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.record({ locale: field(MAX_CHARS.locale), timezone: field(MAX_CHARS.timezone) }, { requiredKeys: [] }),
  fc.record({ locale: formField(LOCALES, `en${'-abcdefgh'.repeat(6)}-abcdefg`), timezone: formField(ZONES, `A${'/Abcdefg'.repeat(8)}`.slice(0, 64)) }, { requiredKeys: [] }),
  fc.constant([]),
  fc.constant('en'),
);

const item = fc
  .record(
    {
      type: fc.oneof({ weight: 12, arbitrary: fc.constantFrom(...EVENT_TYPES) }, { weight: 1, arbitrary: fc.constantFrom('bogus', undefined, 3) }),
      event_name: fc.oneof(fc.constantFrom(...COPILOT_EVENT_NAMES), field(MAX_CHARS.event_name)),
      user_alias: field(MAX_CHARS.user_alias),
      message_id: field(MAX_CHARS.message_id),
      timestamp,
      properties,
      context,
      group_type: field(MAX_CHARS.group_type),
      group_name: field(MAX_CHARS.group_name),
      url: field(MAX_CHARS.url),
      screen_name: field(MAX_CHARS.screen_name),
      agent_id: field(MAX_CHARS.agent_id),
      conversation_id: field(MAX_CHARS.conversation_id),
      copilot_session_id: field(MAX_CHARS.copilot_session_id),
      prompt: field(MAX_CHARS.prompt),
      response: field(MAX_CHARS.response),
      rating: field(MAX_CHARS.rating),
      rating_scale: field(MAX_CHARS.rating_scale),
      extra: fc.jsonValue({ maxDepth: 1 }),
    },
    { requiredKeys: [] },
  )
  .map((o): Record<string, unknown> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)));

/** Items that satisfy their type's required fields more often than `item` alone would. */
const likelyValid = item.map((o) => {
  const fill: Record<string, unknown> = { event_name: 'signup', group_name: 'g', url: 'https://e.com/', screen_name: 's', agent_id: 'a', conversation_id: 'c', copilot_session_id: 's', prompt: 'p', response: 'r', rating: '5', rating_scale: '5' };
  for (const [k, v] of Object.entries(fill)) if (typeof o[k] !== 'string' || (o[k] as string).length === 0) o[k] = v;
  if (o.type === 'copilot' && !(COPILOT_EVENT_NAMES as readonly string[]).includes(o.event_name as string)) o.event_name = 'service_copilot_response';
  return o;
});

/** Items whose every field is of the schema's (required ones filled): most of them valid. */
const valid = likelyValid.map((o) => {
  for (const [k, max] of [['user_alias', 255], ['message_id', 255]] as const) {
    const v = o[k];
    if (v != null && (typeof v !== 'string' || v.length === 0 || [...v].length > max)) delete o[k];
  }
  if (o.properties != null && (typeof o.properties !== 'object' || Array.isArray(o.properties) || JSON.stringify(o.properties).length > 1000)) delete o.properties;
  if (o.timestamp != null && parseIsoMillis(String(o.timestamp)) === undefined) delete o.timestamp;
  if (typeof o.type !== 'string' || !(EVENT_TYPES as readonly string[]).includes(o.type)) o.type = 'identify';
  return o;
});

const batch: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 12, arbitrary: fc.array(fc.oneof({ weight: 4, arbitrary: valid }, { weight: 2, arbitrary: likelyValid }, { weight: 2, arbitrary: item }, { weight: 1, arbitrary: fc.oneof(fc.constant(null), fc.constant([]), fc.string()) }), { minLength: 1, maxLength: 4 }) },
  { weight: 1, arbitrary: fc.constantFrom([], {}, null, 'x', 3) },
  { weight: 1, arbitrary: fc.integer({ min: 99, max: 101 }).map((n) => Array.from({ length: n }, () => ({ type: 'track', event_name: 'n' }))) },
);

function attempt<T>(f: () => T): { ok: true; value: T } | { ok: false; error: DomainError } {
  try {
    return { ok: true, value: f() };
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    return { ok: false, error };
  }
}

describe('events: one walk from the parsed body to RowBinary rows (encode.ts)', () => {
  it('the walk accepts exactly the batches the schema accepts; the rows are those of the schema output; a refused batch gets the schema 400 word for word (property)', () => {
    let accepted = 0;
    let refused = 0;
    fc.assert(
      fc.property(batch, (raw) => {
        const schema = attempt(() => parseEventBatch(structuredClone(raw)));
        const fast = fastEncode(raw, ORG, RECEIVED);
        expect(fast !== undefined, JSON.stringify(raw).slice(0, 500)).to.equal(schema.ok);
        const full = attempt(() => encodeEventBatch(raw, ORG, RECEIVED));
        if (!schema.ok) {
          refused++;
          expect(full.ok).to.equal(false);
          if (!full.ok) expect({ message: full.error.message, issues: full.error.issues }).to.deep.equal({ message: schema.error.message, issues: schema.error.issues });
          return;
        }
        accepted++;
        expect(full.ok).to.equal(true);
        const chunk = (full as { value: EventChunk }).value;
        const expected = toEventRows(ORG, schema.value, RECEIVED);
        const { rows: got, maps } = decodeWithMaps(chunk);
        expect(got).to.have.length(expected.length);
        got.forEach((row, i) => {
          const want = expected[i];
          expect(row.event_id).to.match(UUID_V4);
          if (want.anonymous) expect(row.user_id).to.match(UUID_V4);
          expect({ ...row, event_id: '', user_id: want.anonymous ? '' : row.user_id, message_key: '' }).to.deep.equal({ ...want, event_id: '', user_id: want.anonymous ? '' : want.user_id, message_key: '' });
          expect(row.message_key).to.equal(want.message_id === '' ? '00'.repeat(16) : messageKey(ORG, want.message_id).toString('hex'));
          if (want.message_id !== '') expect(chunk.eventId(i)).to.equal(row.event_id);
          expect(maps[i]).to.deep.equal(mapOf(want.properties));
        });
        expect(chunk.rows).to.equal(expected.length);
        expect(chunk.keys === undefined).to.equal(expected.every((r) => r.message_id === ''));
      }),
      { numRuns: 1500 },
    );
    // Both sides of the contract were exercised.
    expect(accepted).to.be.greaterThan(150);
    expect(refused).to.be.greaterThan(150);
  });

  it('reads timestamps as parseIsoMillis does, in the form senders use and every other (property)', () => {
    fc.assert(
      fc.property(timestamp.filter((t): t is string => typeof t === 'string'), (t) => {
        expect(isoMillis(t)).to.equal(parseIsoMillis(t));
      }),
      { numRuns: 3000 },
    );
  });

  it('a chunk without some of its rows is exactly the rows left (what a flush sends when ids repeat)', () => {
    const chunk = encodeEventBatch(
      [0, 1, 2, 3, 4].map((i) => ({ type: 'track', event_name: `e${i}`, message_id: `m${i}` })),
      ORG,
      RECEIVED,
    );
    const names = (body: Buffer) => decode(Object.assign(Object.create(Object.getPrototypeOf(chunk)), chunk, { body })).map((r) => r.event_name);
    expect(names(chunk.without([0, 2]))).to.deep.equal(['e1', 'e3', 'e4']);
    expect(names(chunk.without([4]))).to.deep.equal(['e0', 'e1', 'e2', 'e3']);
    expect(names(chunk.without([0, 1, 2, 3, 4]))).to.deep.equal([]);
    expect(decode(chunk)[0].group_id).to.equal(NIL_UUID);
  });
});
