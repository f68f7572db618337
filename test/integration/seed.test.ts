import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { isDeepStrictEqual } from 'node:util';
import { parseResponseBatch, toResponseRow } from '../../src/responses/record.ts';
import { rebuildRecord, type StoredColumns } from '../../src/responses/stored-doc.ts';
import { runSeedCommand } from '../../src/seed/cli.ts';
import { seedResponses, type SeedResult } from '../../src/seed/responses.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * Seeds 2,000 responses into a fresh database and checks them with SQL and against the writer's
 * own mapping: every seeded row must be exactly the row POST /1.0/survey/response would store for
 * its record (rebuilt from `doc` and the columns: stored-doc.ts), so search, summary and aggregation
 * see seeded data as real data.
 */
const N = 2000;
const DAYS = 30;
const ISO_MICROS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

describe('seed: synthetic survey responses', function () {
  this.timeout(300_000);
  let svc: TestService;
  let result: SeedResult;
  const now = new Date();
  const progress: Array<[number, number]> = [];
  let rows: Record<string, any>[];
  /** The record a row stores (its doc and columns; `rows` hold the timestamps as text). */
  const recordOf = (row: Record<string, any>) => rebuildRecord(row as StoredColumns) as Record<string, any>;

  const query = async <T = Record<string, any>>(sql: string, params: Record<string, unknown> = {}): Promise<T[]> =>
    (await (await svc.client.query({ query: sql, query_params: { org: svc.orgId, ...params }, format: 'JSONEachRow' })).json<T>());

  before(async () => {
    svc = await startTestService();
    result = await seedResponses(svc.client, { orgId: svc.orgId, responses: N, days: DAYS, now, onProgress: (d, t) => progress.push([d, t]) });
    rows = await query(
      `SELECT * EXCEPT (created_at, updated_at, ended_at, last_answer_at),
              toString(created_at) AS created_at, toString(updated_at) AS updated_at,
              toString(ended_at) AS ended_at, toString(last_answer_at) AS last_answer_at
       FROM survey_responses FINAL WHERE org_id = {org:UUID}`,
    );
  });
  after(async () => svc?.close());

  it('reports what it wrote, with progress', () => {
    expect(result.inserted).to.equal(N);
    expect(result.seconds).to.be.greaterThan(0);
    expect(result.surveyIds).to.have.length(5);
    expect(progress.at(-1)).to.deep.equal([N, N]);
  });

  it('writes exactly N responses, all in the seeded surveys', async () => {
    const [c] = await query<{ n: string; ids: string; surveys: string }>(
      `SELECT count() AS n, uniqExact(id) AS ids, uniqExact(survey_id) AS surveys FROM survey_responses FINAL
       WHERE org_id = {org:UUID} AND survey_id IN {surveys:Array(UUID)}`,
      { surveys: result.surveyIds },
    );
    expect([Number(c.n), Number(c.ids), Number(c.surveys)]).to.deep.equal([N, N, 5]);
  });

  it('records the identity of every seeded response in the key table the API writer reads', async () => {
    // Its own org, so the version written below changes nothing the other cases count.
    const org = randomUUID();
    const q = <T>(sql: string, params: Record<string, unknown> = {}) => query<T>(sql, { org, ...params });
    await seedResponses(svc.client, { orgId: org, responses: 50, days: DAYS, now });
    const [c] = await q<{ ids: string; matching: string; claims: string }>(
      `SELECT uniqExact(k.id) AS ids, countIf(k.survey_id = r.survey_id AND k.created_at = r.created_at) AS matching, count() AS claims
       FROM survey_response_ids AS k JOIN (SELECT id, survey_id, created_at FROM survey_responses FINAL WHERE org_id = {org:UUID}) AS r ON r.id = k.id
       WHERE k.org_id = {org:UUID}`,
    );
    expect([Number(c.ids), Number(c.matching), Number(c.claims)]).to.deep.equal([50, 50, 50]);
    // So a later API version of a seeded response keeps its created_at: one row, not two.
    const [first] = await q<Record<string, any>>(
      `SELECT * EXCEPT (created_at, updated_at, ended_at, last_answer_at), toString(created_at) AS created_at, toString(updated_at) AS updated_at,
              toString(ended_at) AS ended_at, toString(last_answer_at) AS last_answer_at FROM survey_responses WHERE org_id = {org:UUID} LIMIT 1`,
    );
    const doc = recordOf(first);
    const token = await svc.token(['responses:write'], org);
    const moved = { ...doc, created_at: '2020-01-01T00:00:00.000000Z', updated_at: '2099-01-01T00:00:00.000000Z' };
    expect((await svc.request('POST', '/1.0/survey/response', { token, body: [moved] })).status).to.equal(200);
    const [after] = await q<{ n: string; created: string; updated: string }>(
      'SELECT count() AS n, toString(any(created_at)) AS created, toString(any(updated_at)) AS updated FROM survey_responses FINAL WHERE org_id = {org:UUID} AND id = {id:UUID}',
      { id: doc.id },
    );
    expect([Number(after.n), after.created, after.updated]).to.deep.equal([1, first.created_at, '2099-01-01 00:00:00.000000']);
  });

  it('stores for every doc exactly the row the response writer would store (doc bytes included)', () => {
    expect(rows).to.have.length(N);
    for (const row of rows) {
      const record = parseResponseBatch([recordOf(row)], svc.orgId)[0];
      const expected = toResponseRow(record, svc.orgId) as unknown as Record<string, unknown>;
      for (const [key, value] of Object.entries(expected)) {
        if (!isDeepStrictEqual(row[key], value)) {
          expect.fail(`row ${row.id} column ${key}: stored ${JSON.stringify(row[key])}, expected ${JSON.stringify(value)}`);
        }
      }
    }
  });

  it('keeps doc consistent with the typed columns: ids, states and microsecond timestamps', async () => {
    // A member the doc holds (stored-doc.ts leaves out those the columns give back) agrees with its column.
    const [bad] = await query<Record<string, string>>(
      `SELECT countIf(NOT isValidJSON(doc)) AS invalid,
              countIf(JSONHas(doc, 'id') AND JSONExtractString(doc, 'id') != toString(id)) AS id,
              countIf(JSONHas(doc, 'survey_id') AND JSONExtractString(doc, 'survey_id') != toString(survey_id)) AS survey,
              countIf(JSONHas(doc, 'completion') AND JSONExtractString(doc, 'completion') != toString(completion)) AS completion,
              countIf(JSONHas(doc, 'active') AND JSONExtractBool(doc, 'active') != active) AS active,
              countIf(JSONHas(doc, 'end_reason') AND JSONExtractString(doc, 'end_reason') != end_reason) AS end_reason,
              countIf(JSONHas(doc, 'created_at') AND JSONExtractString(doc, 'created_at') != formatDateTime(created_at, '%Y-%m-%dT%H:%i:%S.%fZ')) AS created_at
       FROM survey_responses FINAL WHERE org_id = {org:UUID}`,
    );
    expect(Object.values(bad).map(Number)).to.deep.equal([0, 0, 0, 0, 0, 0, 0]);
    for (const row of rows.slice(0, 200)) {
      const doc = recordOf(row);
      for (const field of ['created_at', 'updated_at']) expect(doc[field]).to.match(ISO_MICROS);
      if (doc.ended_at !== '') expect(doc.ended_at).to.match(ISO_MICROS);
      for (const a of doc.answers) expect(a.time).to.match(ISO_MICROS);
    }
  });

  it('ends responses consistently with `active`', async () => {
    const states = await query<{ active: boolean; end_reason: string; completion: string; ended: string; n: string }>(
      `SELECT active, end_reason, completion, ended_at IS NOT NULL AS ended, count() AS n
       FROM survey_responses FINAL WHERE org_id = {org:UUID} GROUP BY ALL`,
    );
    const total = (f: (s: (typeof states)[number]) => boolean) => states.filter(f).reduce((a, s) => a + Number(s.n), 0);
    expect(total((s) => s.active && (s.end_reason !== '' || Boolean(Number(s.ended))))).to.equal(0);
    expect(total((s) => !s.active && !['closed', 'completed', 'expired', 'interrupted'].includes(s.end_reason))).to.equal(0);
    expect(total((s) => !s.active && !Number(s.ended))).to.equal(0);
    expect(total((s) => s.active && s.completion === 'fully_completed')).to.equal(0);
    expect(total((s) => s.active), 'open responses (mostly recent ones)').to.be.greaterThan(0);
    const completed = total((s) => s.end_reason === 'completed');
    expect(total((s) => s.end_reason === 'completed' && s.completion === 'fully_completed') / completed).to.be.greaterThan(0.9);
    for (const reason of ['closed', 'completed', 'expired', 'interrupted']) expect(total((s) => s.end_reason === reason), reason).to.be.greaterThan(0);
  });

  it('orders timestamps: created <= answers <= last answer <= updated <= now, within the last D days', () => {
    const first = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - (DAYS - 1) * 86_400_000;
    for (const row of rows) {
      const doc = recordOf(row);
      const created = doc.created_at;
      expect(Date.parse(created)).to.be.within(first, now.getTime());
      expect(doc.updated_at >= created, row.id).to.equal(true);
      expect(Date.parse(doc.updated_at)).to.be.at.most(now.getTime());
      const times = doc.answers.map((a: { time: string }) => a.time);
      expect(times, row.id).to.deep.equal([...times].sort());
      for (const t of times) expect(t >= created && t <= doc.updated_at, row.id).to.equal(true);
      expect(doc.last_answer_at).to.equal(times.at(-1) ?? '');
    }
  });

  it('skews scores plausibly: NPS promoters outnumber detractors, nothing uniform', async () => {
    const scores = await query<{ cta: string; score: number; n: string }>(
      `SELECT ans_cta_types[i] AS cta, ans_scores[i] AS score, count() AS n
       FROM survey_responses FINAL ARRAY JOIN arrayEnumerate(ans_cta_types) AS i
       WHERE org_id = {org:UUID} AND cta IN ('nps', 'csat', 'ces') GROUP BY cta, score`,
    );
    const dist = (cta: string) => new Map(scores.filter((s) => s.cta === cta).map((s) => [Number(s.score), Number(s.n)]));
    const nps = dist('nps');
    const npsTotal = [...nps.values()].reduce((a, b) => a + b, 0);
    const share = (lo: number, hi: number) => [...nps].filter(([s]) => s >= lo && s <= hi).reduce((a, [, n]) => a + n, 0) / npsTotal;
    expect([...nps.keys()].every((s) => Number.isInteger(s) && s >= 0 && s <= 10)).to.equal(true);
    expect(share(9, 10)).to.be.within(0.4, 0.7);
    expect(share(7, 8)).to.be.within(0.15, 0.4);
    expect(share(0, 6)).to.be.within(0.08, 0.3);
    for (const [cta, lo, hi] of [['nps', 0, 10], ['csat', 1, 5], ['ces', 1, 7]] as const) {
      const d = dist(cta);
      expect([...d.keys()].every((s) => s >= lo && s <= hi), cta).to.equal(true);
      const counts = [...d.values()];
      // Uniform would put every score near the mean; the most common is at least three times the rarest.
      expect(Math.max(...counts) / Math.min(...counts), cta).to.be.greaterThan(3);
    }
  });

  it('makes people: several languages with matching locales, shared groups, internal and customer aliases', async () => {
    const languages = new Set(rows.map((r) => r.language));
    expect(languages.size).to.be.at.least(5);
    for (const row of rows) {
      expect(row.locale.startsWith(`${row.language}-`), row.locale).to.equal(true);
      expect(row.hf_strings[row.hf_keys.indexOf('locale')]).to.equal(row.locale);
      expect(row.respondent_aliases[0]).to.equal(row.respondent_id);
      expect(row.respondent_aliases[1]).to.match(/^user-\d+@example\.com$/);
      expect(['desktop', 'mobile']).to.include(row.hf_strings[row.hf_keys.indexOf('support')]);
      expect(row.hf_types[row.hf_keys.indexOf('logged_in')]).to.equal(1);
      expect(row.hf_types[row.hf_keys.indexOf('session_count')]).to.equal(2);
    }
    const [shared] = await query<{ groups: string }>(
      `SELECT countIf(respondents > 1) AS groups FROM (
         SELECT g, uniqExact(respondent_id) AS respondents FROM survey_responses FINAL ARRAY JOIN group_ids AS g
         WHERE org_id = {org:UUID} GROUP BY g)`,
    );
    expect(Number(shared.groups)).to.be.greaterThan(0);
    const repeat = rows.length - new Set(rows.map((r) => r.respondent_id)).size;
    expect(repeat, 'respondents answering more than once').to.be.greaterThan(0);
  });

  it('is reproducible: the same org, seed and now write the same responses again', async () => {
    await seedResponses(svc.client, { orgId: svc.orgId, responses: N, days: DAYS, now });
    // (A doc is what the columns do not hold: two responses without answers may store the same one.)
    const [c] = await query<{ rows: string; ids: string; docs: string }>(
      `SELECT count() AS rows, uniqExact(id) AS ids, uniqExact(id, doc) AS docs FROM survey_responses WHERE org_id = {org:UUID}`,
    );
    expect([Number(c.rows), Number(c.ids), Number(c.docs)]).to.deep.equal([2 * N, N, N]);
  });

  it('serves seeded docs through SEARCH /1.0/survey/*/response', async () => {
    const token = await svc.token(['responses:read']);
    const res = await svc.request('SEARCH', '/1.0/survey/*/response', { token, body: { size: 5 } });
    expect(res.status).to.equal(200);
    expect(res.body.hits.total.value).to.equal(N);
    expect(res.body.hits.responses).to.have.length(5);
    const byId = new Map(rows.map((r) => [r.id, recordOf(r)]));
    for (const doc of res.body.hits.responses) expect(doc).to.deep.equal(byId.get(doc.id));
  });

  it('a run at another `now` adds new responses from the same people', async () => {
    const later = new Date(now.getTime() + 3_600_000);
    await seedResponses(svc.client, { orgId: svc.orgId, responses: N, days: DAYS, now: later });
    const [c] = await query<{ n: string; ids: string; respondents: string }>(
      `SELECT count() AS n, uniqExact(id) AS ids, uniqExact(respondent_id) AS respondents FROM survey_responses FINAL WHERE org_id = {org:UUID}`,
    );
    const before = new Set(rows.map((r) => r.respondent_id)).size;
    expect([Number(c.n), Number(c.ids)]).to.deep.equal([2 * N, 2 * N]);
    // Both runs draw from one pool of 0.6 N respondents: the union is no larger than the pool.
    expect(Number(c.respondents)).to.be.within(before + 1, Math.round(0.6 * N));
  });

  it('the CLI command prints one result line with count, seconds and rate', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const org = '5eed0000-0000-4000-8000-000000000001';
    await runSeedCommand(svc.client, ['--responses', '50', '--org', org, '--surveys', '2', '--days', '7'], { out: (l) => out.push(l), err: (l) => err.push(l) });
    expect(out).to.have.length(1);
    expect(out[0]).to.match(new RegExp(`^seeded 50 responses in \\d+\\.\\d s \\([\\d,]+ responses/s\\) for org ${org}, surveys [0-9a-f-]{36},[0-9a-f-]{36}$`));
    const [c] = await query<{ n: string }>(`SELECT count() AS n FROM survey_responses FINAL WHERE org_id = {org:UUID}`, { org });
    expect(Number(c.n)).to.equal(50);
  });

  it('on a terminal, the CLI command draws a progress bar with the rate and the time left', async () => {
    const terminal = Object.assign(new PassThrough(), { isTTY: true, columns: 120 }) as unknown as NodeJS.WriteStream;
    let drawn = '';
    (terminal as unknown as PassThrough).on('data', (d) => (drawn += d));
    const out: string[] = [];
    const err: string[] = [];
    await runSeedCommand(svc.client, ['--responses', '300', '--org', '5eed0000-0000-4000-8000-000000000002', '--surveys', '1', '--days', '3'], { out: (l) => out.push(l), err: (l) => err.push(l), terminal });
    expect(drawn).to.match(/seed \[[^\]]+\] 100% \| 300\/300 responses \| [\d,]+ responses\/s \| ETA \S+/);
    expect(err, 'no plain progress lines beside the bar').to.deep.equal([]);
    expect(out).to.have.length(1);
  });

  it('spreads responses over the 10-year --days maximum (one partition per week: more than the default 100 per INSERT)', async () => {
    const org = '5eed0000-0000-4000-8000-000000003650';
    const result = await seedResponses(svc.client, { orgId: org, responses: 1200, days: 3650, now });
    expect(result.inserted).to.equal(1200);
    const [c] = await query<{ n: string; weeks: string }>(
      `SELECT count() AS n, uniqExact(toMonday(created_at)) AS weeks FROM survey_responses FINAL WHERE org_id = {org:UUID}`,
      { org },
    );
    expect(Number(c.n)).to.equal(1200);
    expect(Number(c.weeks)).to.be.greaterThan(100);
  });
});
