import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { selectionOf } from '../../src/responses/compile.ts';
import { CSV_COLUMNS, exportResponses } from '../../src/responses/export.ts';
import { EVENT_CSV_COLUMNS, exportEvents } from '../../src/events/read/export.ts';
import { eventSelectionOf } from '../../src/events/read/search.ts';
import { startTestService, type TestService } from './harness.ts';

/** SEARCH /1.0/survey/<ids>/response/export: every response in scope, newest first, NDJSON or CSV. */
describe('survey response export (NDJSON and CSV)', function () {
  this.timeout(300_000);
  let svc: TestService;
  let token: string;
  const survey = randomUUID();
  const DAY = 86_400_000;
  const base = Date.UTC(2024, 4, 20, 12);
  const iso = (ms: number) => `${new Date(ms).toISOString().slice(0, 23)}000Z`;
  const record = (i: number) => ({
    id: randomUUID(), doc_type: 'response', channel_id: survey, respondent_id: randomUUID(),
    // A comma, a quote and a line break: CSV quoting.
    respondent_aliases: i % 7 === 0 ? ['a,b', 'say "hi"', 'two\nlines'] : [`user-${i}`],
    survey_id: survey, scenario_id: survey, language: i % 2 ? 'fr' : 'en', locale: 'en-US',
    question_id_path: 'q', question_correlation_id_path: 'qc', action_id_path: 'a', action_correlation_id_path: 'ac',
    group_ids: [], hidden_fields: [{ key: 'support', t: 0, v_s: i % 3 ? 'mobile' : 'desk,top' }], emotions: { fear: null, sadness: null, anger: null, joy: null },
    answers: [], completion: 'not_started', active: true, end_reason: '', ended_at: '',
    created_at: iso(base - i * (DAY / 10) - i), updated_at: iso(base), last_answer_at: '',
  });
  const records = Array.from({ length: 240 }, (_, i) => record(i)); // 24 days, 10 a day
  const ids = (text: string) => text.split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l) as { id: string }).id);
  const exportOf = (body: unknown, headers: Record<string, string> = {}, as = token) => svc.request('SEARCH', `/1.0/survey/${survey}/response/export`, { token: as, body, headers });

  before(async () => {
    svc = await startTestService();
    token = await svc.token(['responses:read', 'responses:write']);
    expect((await svc.request('POST', '/1.0/survey/response', { token, body: records })).status).to.equal(200);
  });
  after(async () => svc?.close());

  it('NDJSON (the default): every record, as search returns them, in the search order', async () => {
    const res = await exportOf({});
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/x-ndjson/);
    const search = await svc.request('SEARCH', `/1.0/survey/${survey}/response`, { token, body: { size: 1000 } });
    const lines = (res.body as string).split('\n').filter((l) => l !== '');
    expect(lines.map((l) => JSON.parse(l))).to.deep.equal(search.body.hits.responses);
    expect(lines).to.have.length(records.length);
  });

  it('filters and range narrow it like search; the POST alias answers the same', async () => {
    const body = { filters: [{ type: 'response', key: 'language', operator: 'eq', value: 'fr' }], range: { start: iso(base - 10 * DAY), end: iso(base - 2 * DAY) } };
    const search = await svc.request('SEARCH', `/1.0/survey/${survey}/response`, { token, body: { ...body, size: 1000 } });
    const res = await exportOf(body);
    expect(ids(res.body)).to.deep.equal(search.body.hits.responses.map((r: { id: string }) => r.id));
    expect(ids(res.body).length).to.be.above(20);
    const post = await svc.request('POST', `/1.0/survey/${survey}/response/export`, { token, body });
    expect(post.body).to.equal(res.body);
  });

  it('CSV with Accept: text/csv: a header, one column per top-level field, arrays and objects as JSON text', async () => {
    const res = await exportOf({}, { accept: 'text/csv' });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/csv/);
    const rows = parseCsv(res.body as string);
    expect(rows[0]).to.deep.equal([...CSV_COLUMNS]);
    expect(rows).to.have.length(records.length + 1);
    const byId = new Map<string, (typeof records)[number]>(records.map((r) => [r.id, r]));
    for (const row of rows.slice(1)) {
      const got = Object.fromEntries(CSV_COLUMNS.map((c, i) => [c, row[i]]));
      const want = byId.get(got.id)!;
      expect(JSON.parse(got.respondent_aliases)).to.deep.equal(want.respondent_aliases);
      expect(JSON.parse(got.hidden_fields)).to.deep.equal(want.hidden_fields);
      expect(got.created_at).to.equal(want.created_at);
      expect(got.active).to.equal('true');
      expect(got.survey_id).to.equal(survey);
    }
  });

  it('in time slices of a few days each, the same records in the same order (the real engine, small slices)', async () => {
    const scope = selectionOf(svc.orgId, [survey], { filters_bool: 'AND', filters: [], range: undefined });
    const whole = await text(await exportResponses(svc.client, scope, 'ndjson', new AbortController().signal));
    const sliced = await text(await exportResponses(svc.client, scope, 'ndjson', new AbortController().signal, 25));
    expect(ids(sliced)).to.deep.equal(ids(whole));
    expect(ids(sliced)).to.have.length(records.length);
  });

  it('a client that goes away stops the engine query (no export query left running)', async () => {
    // 30,000 responses of ~2 KB in one day: the first slice (20,000, ~40 MB) cannot all sit in
    // socket buffers, so its query is still sending when the client stops reading.
    const org = randomUUID();
    await svc.client.command({
      query: `INSERT INTO survey_responses (org_id, survey_id, created_at, id, updated_at, doc)
              SELECT {org:UUID}, {survey:UUID}, toDateTime64('2024-01-01 12:00:00', 6, 'UTC') - toIntervalSecond(number) AS c, generateUUIDv4(), c,
                     concat('{"pad":"', repeat('x', 2000), '"}')
              FROM numbers(30000)`,
      query_params: { org, survey },
    });
    const running = async () => {
      const rs = await svc.client.query({
        query: "SELECT count() AS n FROM system.processes WHERE current_database = {db:String} AND query LIKE '%ORDER BY created_at DESC, id DESC%' AND query NOT LIKE '%system.processes%'",
        query_params: { db: svc.database },
        format: 'JSONEachRow',
      });
      return Number((await rs.json<{ n: string }>())[0].n);
    };
    const client = new AbortController();
    const stream = await exportResponses(svc.client, selectionOf(org, '*', { filters_bool: 'AND', filters: [], range: undefined }), 'ndjson', client.signal);
    // One chunk, then nothing read: backpressure holds the engine query where it is.
    await stream[Symbol.asyncIterator]().next();
    await new Promise((r) => setTimeout(r, 200));
    expect(await running(), 'the slice query is still sending').to.equal(1);
    // The client goes away: the route's signal aborts, Koa destroys the answer stream.
    client.abort();
    stream.destroy();
    for (let i = 0; i < 50 && (await running()) > 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await running()).to.equal(0);
    // Stopped, not drained to its end: the engine logged it as cut short.
    await svc.client.command({ query: 'SYSTEM FLUSH LOGS' });
    const logged = await svc.client.query({
      query: "SELECT toString(type) AS type FROM system.query_log WHERE current_database = {db:String} AND query LIKE '%ORDER BY created_at DESC, id DESC%' AND type != 'QueryStart' AND query NOT LIKE '%query_log%' AND query NOT LIKE '%system.processes%' ORDER BY event_time_microseconds DESC LIMIT 1",
      query_params: { db: svc.database },
      format: 'JSONEachRow',
    });
    expect((await logged.json<{ type: string }>())[0]?.type).to.equal('ExceptionWhileProcessing');
  });

  it('size and offset are ignored (as in summary); a bad filter is a 400; another organization exports nothing; responses:read is required', async () => {
    expect(ids((await exportOf({ size: 10, offset: 5 })).body)).to.have.length(records.length);
    const bad = await exportOf({ filters: [{ type: 'response', key: 'completion', operator: 'eq', value: 'done' }] });
    expect(bad.status).to.equal(400);
    expect(bad.body.error.issues[0].path).to.equal('filters[0].value');
    const other = await exportOf({}, {}, await svc.token(['responses:read'], randomUUID()));
    expect(other.status).to.equal(200);
    expect(other.body ?? '').to.equal('');
    expect((await exportOf({}, {}, await svc.token(['responses:write']))).status).to.equal(403);
  });
});

async function text(stream: NodeJS.ReadableStream): Promise<string> {
  let out = '';
  for await (const chunk of stream) out += chunk.toString();
  return out;
}

/** RFC 4180 records (quoted fields may hold commas, quotes and line breaks). */
function parseCsv(input: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < input.length; i++) {
    const ch = input[i];
    if (quoted) {
      if (ch === '"' && input[i + 1] === '"') (field += '"'), i++;
      else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') row.push(field), (field = '');
    else if (ch === '\r' && input[i + 1] === '\n') row.push(field), rows.push(row), (row = []), (field = ''), i++;
    else field += ch;
  }
  return rows;
}

describe('event export (NDJSON and CSV)', function () {
  this.timeout(300_000);
  let svc: TestService;
  let token: string;
  const base = Date.UTC(2026, 9, 20, 12);
  const events = Array.from({ length: 60 }, (_, i) => ({
    type: i % 3 ? 'track' : 'identify', event_name: i % 3 ? `e${i % 4}` : undefined, user_alias: `u${i % 5}`,
    timestamp: new Date(base - i * 9 * 3_600_000).toISOString(), properties: { n: i, note: i % 7 ? 'plain' : 'with, a "quote"' },
  }));
  const exportOf = (body: unknown, headers: Record<string, string> = {}) => svc.request('SEARCH', '/1.0/event/export', { token, body, headers });

  before(async () => {
    svc = await startTestService();
    token = await svc.token(['events', 'events:read']);
    expect((await svc.request('POST', '/1.0/event', { token, body: events })).status).to.equal(200);
  });
  after(async () => svc?.close());

  it('NDJSON: every event as event search returns them, in its order; filters apply', async () => {
    const all = await svc.request('SEARCH', '/1.0/event', { token, body: { size: 1000 } });
    const res = await exportOf({});
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/x-ndjson/);
    expect((res.body as string).split('\n').filter(Boolean).map((l) => JSON.parse(l))).to.deep.equal(all.body.hits.events);
    const body = { filters: [{ key: 'type', operator: 'eq', value: 'track' }] };
    const tracks = await svc.request('SEARCH', '/1.0/event', { token, body: { ...body, size: 1000 } });
    const exported = (await svc.request('POST', '/1.0/event/export', { token, body })).body as string;
    expect(exported.split('\n').filter(Boolean).map((l) => JSON.parse(l).event_id)).to.deep.equal(tracks.body.hits.events.map((e: { event_id: string }) => e.event_id));
  });

  it('CSV: a header and one row per event; properties as JSON text', async () => {
    const res = await exportOf({}, { accept: 'text/csv' });
    expect(res.headers.get('content-type')).to.match(/^text\/csv/);
    const rows = parseCsv(res.body as string);
    expect(rows[0]).to.deep.equal([...EVENT_CSV_COLUMNS]);
    expect(rows).to.have.length(events.length + 1);
    const props = rows.slice(1).map((r) => JSON.parse(r[EVENT_CSV_COLUMNS.indexOf('properties')]) as { n: number; note: string });
    expect(props.map((p) => p.n).sort((a, b) => a - b)).to.deep.equal(events.map((_, i) => i));
    expect(props.find((p) => p.n === 0)!.note).to.equal('with, a "quote"');
  });

  it('in day slices (the real engine, small slices), the same events in the same order; size is a 400', async () => {
    const scope = eventSelectionOf(svc.orgId, { filters_bool: 'AND', filters: [], range: undefined });
    const whole = await text(await exportEvents(svc.client, scope, 'ndjson', new AbortController().signal));
    const sliced = await text(await exportEvents(svc.client, scope, 'ndjson', new AbortController().signal, 5));
    expect(sliced).to.equal(whole);
    expect(whole.split('\n').filter(Boolean)).to.have.length(events.length);
    expect((await exportOf({ size: 5 })).status).to.equal(400);
  });
});
