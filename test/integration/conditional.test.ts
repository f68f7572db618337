import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { POLL_WINDOW_MS } from '../../src/query/request-cache.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * Polled reads (search, summary, aggregation): ETag, Cache-Control, 304 on If-None-Match while
 * the answer is unchanged, 200 with a new tag after a write, and Data-Watermark.
 */
describe('polled reads: ETag, 304 and Data-Watermark (HTTP)', function () {
  this.timeout(300_000);
  let svc: TestService;
  let token: string;
  const survey = randomUUID();
  const record = (completion: string) => ({
    id: randomUUID(), doc_type: 'response', channel_id: survey, respondent_id: randomUUID(), respondent_aliases: [],
    survey_id: survey, scenario_id: survey, language: 'en', locale: 'en-US',
    question_id_path: 'q', question_correlation_id_path: 'qc', action_id_path: 'a', action_correlation_id_path: 'ac',
    group_ids: [], hidden_fields: [], emotions: { fear: null, sadness: null, anger: null, joy: null }, answers: [],
    completion, active: true, end_reason: '', ended_at: '', created_at: '2024-03-01T10:00:00.000000Z', updated_at: '2024-03-01T10:00:00.000000Z', last_answer_at: '',
  });
  const write = async (completion: string) => {
    const res = await svc.request('POST', '/1.0/survey/response', { token, body: [record(completion)] });
    expect(res.status).to.equal(200);
  };
  const READS: Array<[string, unknown]> = [
    ['/response', { size: 5 }],
    ['/response/summary', {}],
    ['/response/aggregation', { group_by: [{ field: 'completion' }] }],
  ];
  const read = (suffix: string, body: unknown, headers: Record<string, string> = {}) => svc.request('SEARCH', `/1.0/survey/${survey}${suffix}`, { token, body, headers });
  const pastTheWindow = () => new Promise((r) => setTimeout(r, POLL_WINDOW_MS + 200));

  before(async () => {
    svc = await startTestService();
    token = await svc.token(['responses:read', 'responses:write']);
    await write('fully_completed');
  });
  after(async () => svc?.close());

  for (const [suffix, body] of READS) {
    it(`${suffix}: ETag and Cache-Control; If-None-Match with it is a 304 with no body; after a write, a 200 with another tag`, async () => {
      const first = await read(suffix, body);
      expect(first.status).to.equal(200);
      const etag = first.headers.get('etag')!;
      expect(etag).to.match(/^"[\w-]{27}"$/);
      expect(first.headers.get('cache-control')).to.equal(`private, max-age=${POLL_WINDOW_MS / 1000}`);
      const same = await read(suffix, body, { 'if-none-match': etag });
      expect(same.status).to.equal(304);
      expect(same.body).to.equal(undefined);
      expect(same.headers.get('etag')).to.equal(etag);
      // A list of tags, one of them weak: still a match; another tag: the answer.
      expect((await read(suffix, body, { 'if-none-match': `"x", W/${etag}` })).status).to.equal(304);
      expect((await read(suffix, body, { 'if-none-match': '"other"' })).status).to.equal(200);
      // Past the polling window the answer is computed again: `took` may differ, the tag does not.
      await pastTheWindow();
      const again = await read(suffix, body, { 'if-none-match': etag });
      expect(again.status).to.equal(304);

      await write('not_started');
      await pastTheWindow();
      const changed = await read(suffix, body, { 'if-none-match': etag });
      expect(changed.status).to.equal(200);
      expect(changed.headers.get('etag')).to.not.equal(etag);
    });
  }

  it('Data-Watermark: every write acknowledged before it is in the answer', async () => {
    await pastTheWindow();
    const acknowledged = Date.now();
    await write('partially_completed');
    const res = await read('/response/summary', {});
    const watermark = Date.parse(res.headers.get('data-watermark')!);
    expect(watermark).to.be.at.least(acknowledged);
    const total = Object.values(res.body.completion as Record<string, number>).reduce((a, b) => a + b, 0);
    const search = await read('/response', { size: 0 });
    expect(total).to.equal(search.body.hits.total.value);
    expect(Date.parse(search.headers.get('data-watermark')!)).to.be.at.least(acknowledged);
    // Within the polling window the same answer comes back with the instant of its run.
    const cached = await read('/response/summary', {});
    expect(cached.headers.get('data-watermark')).to.equal(res.headers.get('data-watermark'));
  });
});

/**
 * Event reads are polled by dashboards like the survey reads (decisions.md: query answers carry
 * ETag, Cache-Control and Data-Watermark; If-None-Match -> 304).
 */
describe('polled event reads: ETag, 304 and Data-Watermark (HTTP)', function () {
  this.timeout(300_000);
  let svc: TestService;
  let writeToken: string;
  let readToken: string;
  const name = `polled-${randomUUID()}`;
  const write = async () => {
    const res = await svc.request('POST', '/1.0/event', { token: writeToken, body: [{ type: 'track', event_name: name, user_alias: `u-${randomUUID()}` }] });
    expect(res.status).to.equal(200);
  };
  const filters = [{ key: 'event_name', operator: 'eq', value: name }];
  const READS: Array<[string, unknown]> = [
    ['/1.0/event', { size: 5, filters }],
    ['/1.0/event/aggregation', { filters, group_by: [{ field: 'event_name' }] }],
  ];
  const read = (path: string, body: unknown, headers: Record<string, string> = {}) => svc.request('SEARCH', path, { token: readToken, body, headers });
  const pastTheWindow = () => new Promise((r) => setTimeout(r, POLL_WINDOW_MS + 200));
  const count = (body: { hits: { total: { value: number } } }) => body.hits.total.value;

  before(async () => {
    svc = await startTestService();
    writeToken = await svc.token(['events']);
    readToken = await svc.token(['events:read']);
    await write();
  });
  after(async () => svc?.close());

  for (const [path, body] of READS) {
    it(`${path}: ETag and Cache-Control; If-None-Match with it is a 304; after a write, a 200 with another tag and a watermark past the write`, async () => {
      const first = await read(path, body);
      expect(first.status).to.equal(200);
      const etag = first.headers.get('etag')!;
      expect(etag).to.match(/^"[\w-]{27}"$/);
      expect(first.headers.get('cache-control')).to.equal(`private, max-age=${POLL_WINDOW_MS / 1000}`);
      expect(Date.parse(first.headers.get('data-watermark')!)).to.be.a('number').and.not.NaN;
      const same = await read(path, body, { 'if-none-match': etag });
      expect(same.status).to.equal(304);
      expect(same.body).to.equal(undefined);
      expect((await read(path, body, { 'if-none-match': '"other"' })).status).to.equal(200);

      await pastTheWindow();
      const acknowledged = Date.now();
      await write();
      const changed = await read(path, body, { 'if-none-match': etag });
      expect(changed.status).to.equal(200);
      expect(changed.headers.get('etag')).to.not.equal(etag);
      expect(count(changed.body)).to.equal(count(first.body) + 1);
      expect(Date.parse(changed.headers.get('data-watermark')!)).to.be.at.least(acknowledged);
    });
  }
});
