import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestService, type TestService } from './harness.ts';

/**
 * Cursor paging of SEARCH /1.0/survey/<ids>/response: next_cursor walks every match once, newest
 * first by (created_at, id), while new responses and new versions arrive between the pages.
 */
describe('search: cursor paging (next_cursor)', function () {
  this.timeout(300_000);
  let svc: TestService;
  let token: string;
  const survey = randomUUID();
  const other = randomUUID();
  const DAY = 86_400_000;
  const now = Date.now();
  const iso = (ms: number, micros = 0) => `${new Date(ms).toISOString().slice(0, 23)}${String(micros).padStart(3, '0')}Z`;

  interface Rec { id: string; survey_id: string; created_at: string; language: string; completion: string; updated_at: string }
  const record = (survey_id: string, created_at: string, language: string, completion = 'not_started', updated_at = created_at) => ({
    id: randomUUID(), doc_type: 'response', channel_id: survey_id, respondent_id: randomUUID(), respondent_aliases: [],
    survey_id, scenario_id: survey_id, language, locale: 'en-US',
    question_id_path: 'q', question_correlation_id_path: 'qc', action_id_path: 'a', action_correlation_id_path: 'ac',
    group_ids: [], hidden_fields: [], emotions: { fear: null, sadness: null, anger: null, joy: null }, answers: [],
    completion, active: true, end_reason: '', ended_at: '', created_at, updated_at, last_answer_at: '',
  });
  // 400 responses over two years (every page window is used), in pairs that share a created_at to
  // the microsecond (the id decides their order), half of them in French.
  const initial: Rec[] = [];
  for (let i = 0; i < 200; i++) {
    const at = iso(now - Math.floor((i * i * 730 * DAY) / 40_000) - i * 1000, i % 1000);
    initial.push(record(survey, at, i % 2 ? 'fr' : 'en'), record(survey, at, i % 3 ? 'en' : 'fr'));
  }
  // The engine orders UUIDs by their second half first (toUUID('2c41fe53-...-db4bf63aef13') >
  // toUUID('37796205-...-cfcc4db52336')): ties on created_at follow that order.
  const uuidKey = (id: string) => id.replace(/-/g, '').slice(16) + id.replace(/-/g, '').slice(0, 16);
  const newestFirst = (a: Rec, b: Rec) =>
    a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : uuidKey(a.id) < uuidKey(b.id) ? 1 : uuidKey(a.id) > uuidKey(b.id) ? -1 : 0;
  const write = async (records: unknown[]) => {
    const res = await svc.request('POST', '/1.0/survey/response', { token, body: records });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
  };
  const search = (body: Record<string, unknown>, ids: string = survey, as: string = token) => svc.request('SEARCH', `/1.0/survey/${ids}/response`, { token: as, body });

  before(async () => {
    svc = await startTestService();
    token = await svc.token(['responses:read', 'responses:write']);
    for (let i = 0; i < initial.length; i += 200) await write(initial.slice(i, i + 200));
  });
  after(async () => svc?.close());

  /** Every page of a walk from `body`, following next_cursor; `between` runs before each next page. */
  async function walk(body: Record<string, unknown>, between: (page: number) => Promise<void> = async () => {}) {
    const ids: string[] = [];
    const positions: Array<[string, string]> = [];
    let cursor: string | undefined;
    for (let page = 0; page < 1000; page++) {
      const res = await search(cursor === undefined ? body : { ...body, cursor });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      for (const r of res.body.hits.responses as Rec[]) {
        ids.push(r.id);
        positions.push([r.created_at, r.id]);
      }
      cursor = res.body.next_cursor;
      if (cursor === undefined) return { ids, positions, pages: page + 1 };
      await between(page);
    }
    throw new Error('the walk did not end');
  }

  it('walks every response once, newest first, while new responses and new versions arrive', async () => {
    const arrivedNewer: string[] = [];
    const arrivedOlder: string[] = [];
    const walked = await walk({ size: 37 }, async (page) => {
      // Newer than every page so far: never shown by this walk.
      const newer = record(survey, iso(Date.now() + DAY), 'en');
      // Older than every response: shown on a later page of this walk.
      const older = record(survey, iso(now - 800 * DAY - page), 'en');
      arrivedNewer.push(newer.id);
      arrivedOlder.push(older.id);
      // New versions of responses already walked and not yet walked: they keep their place.
      const versions = [initial[page * 37], initial[page * 37 + 200]].filter(Boolean).map((r) => ({ ...record(survey, r.created_at, r.language, 'fully_completed', iso(now + page)), id: r.id }));
      await write([newer, older, ...versions]);
    });
    const want = [...initial.map((r) => r.id), ...arrivedOlder];
    expect(new Set(walked.ids).size, 'no duplicate').to.equal(walked.ids.length);
    expect([...walked.ids].sort()).to.deep.equal([...want].sort());
    for (const id of arrivedNewer) expect(walked.ids).to.not.include(id);
    // Strictly descending (created_at, id): the order of the keyset.
    for (let i = 1; i < walked.positions.length; i++) {
      const [a, b] = [walked.positions[i - 1], walked.positions[i]];
      expect(a[0] > b[0] || (a[0] === b[0] && uuidKey(a[1]) > uuidKey(b[1])), `${a} then ${b}`).to.equal(true);
    }
    // The walk in the order the offset paging gives for the initial responses.
    expect(walked.ids.filter((id) => initial.some((r) => r.id === id))).to.deep.equal([...initial].sort(newestFirst).map((r) => r.id));
    // And in the order offset paging gives now.
    const byOffset = await search({ size: 1000 });
    expect(byOffset.body.hits.responses.map((r: Rec) => r.id).filter((id: string) => walked.ids.includes(id))).to.deep.equal(walked.ids);
  });

  it('with filters and a range: the same responses as the reference, pages ending without next_cursor', async () => {
    const range = { start: iso(now - 400 * DAY).slice(0, 10), end: iso(now - 3 * DAY) };
    const body = { size: 25, filters: [{ type: 'response', key: 'language', operator: 'eq', value: 'fr' }], range };
    const walked = await walk(body);
    const want = initial.filter((r) => r.language === 'fr' && r.created_at >= `${range.start}T00:00:00.000000Z` && r.created_at <= range.end).sort(newestFirst);
    expect(want.length).to.be.above(50);
    expect(walked.ids).to.deep.equal(want.map((r) => r.id));
    expect(walked.pages).to.equal(Math.ceil(want.length / 25));
    // total counts every match of the search, whatever the cursor.
    const first = await search(body);
    const second = await search({ ...body, cursor: first.body.next_cursor });
    expect(second.body.hits.total.value).to.equal(want.length);
  });

  it('offset counts from the cursor; the last page has no next_cursor', async () => {
    const first = await search({ size: 10 });
    const skip = await search({ size: 5, offset: 3, cursor: first.body.next_cursor });
    const plain = await search({ size: 5, offset: 13 });
    expect(skip.body.hits.responses.map((r: Rec) => r.id)).to.deep.equal(plain.body.hits.responses.map((r: Rec) => r.id));
    const all = await search({ size: 1000 });
    expect(all.body.next_cursor).to.equal(undefined);
  });

  it('a cursor from another search, another organization or not from us is a 400 naming cursor', async () => {
    const { body } = await search({ size: 5 });
    const cursor = body.next_cursor as string;
    const cases: Array<[Record<string, unknown>, string?, string?]> = [
      [{ cursor, filters: [{ type: 'response', key: 'language', operator: 'eq', value: 'fr' }] }],
      [{ cursor, range: { start: '2020-01-01' } }],
      [{ cursor }, `${survey},${other}`],
      [{ cursor }, survey, await svc.token(['responses:read'], randomUUID())],
      [{ cursor: 'not-a-cursor' }],
      [{ cursor: Buffer.from(JSON.stringify({ c: "2024-01-01 00:00:00.000000' OR 1=1", i: randomUUID(), f: 'x' })).toString('base64url') }],
      [{ cursor: '' }],
      [{ cursor: 42 }],
    ];
    for (const [b, ids, as] of cases) {
      const res = await search(b, ids, as);
      expect(res.status, JSON.stringify(b)).to.equal(400);
      expect(res.body.error.issues[0].path, JSON.stringify(b)).to.equal('cursor');
    }
  });
});
