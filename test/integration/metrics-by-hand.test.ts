import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestService, type TestService } from './harness.ts';
import { isoMicros } from './random.ts';

type Rec = Record<string, any>;

/**
 * Survey metrics over time as a dashboard user reads them, on a few responses whose every answer
 * is counted by hand here: edges of buckets and of comparison periods.
 */
describe('survey metrics by hand (HTTP)', function () {
  this.timeout(180_000);
  let svc: TestService;
  let read: string;
  const survey = randomUUID();
  const npsQ = randomUUID();

  const response = (createdAt: string, score: number, completion = 'fully_completed') => {
    const at = Date.parse(createdAt);
    return {
      id: randomUUID(), survey_id: survey, channel_id: randomUUID(), respondent_id: randomUUID(), language: 'en', completion, active: false,
      end_reason: 'completed', ended_at: isoMicros(at + 1000), created_at: isoMicros(at), updated_at: isoMicros(at + 1000), hidden_fields: [],
      answers: [{ t: 2, v_d: score, cta_type: 'nps', question_id: npsQ, question_correlation_id: npsQ }],
    };
  };

  before(async () => {
    svc = await startTestService();
    read = await svc.token(['responses:read']);
    const records = [
      // January 2024: a detractor on the 10th, promotors on the 30th and in the last second of the 31st.
      response('2024-01-10T12:00:00Z', 3), response('2024-01-30T08:00:00Z', 10), response('2024-01-31T23:59:59Z', 9),
      // February 2024 (29 days): one promotor on the 29th.
      response('2024-02-29T12:00:00Z', 10),
      // February 2025 (28 days): one detractor.
      response('2025-02-14T12:00:00Z', 0),
    ];
    // 2023-06-01: 800 responses, 57 of them fully completed (57 / 800 = 0.07125 exactly).
    for (let i = 0; i < 800; i++) records.push(response(`2023-06-01T${String(Math.floor(i / 60) % 24).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}:00Z`, 5, i < 57 ? 'fully_completed' : 'partially_completed'));
    const write = await svc.token(['responses:write']);
    for (let i = 0; i < records.length; i += 1000) {
      const res = await svc.request('POST', '/1.0/survey/response', { token: write, body: records.slice(i, i + 1000) });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
    }
    await svc.settle();
  });
  after(() => svc.close());

  const monthly = (start: string, end: string, compare: unknown) =>
    svc.request('SEARCH', '/1.0/survey/*/response/aggregation', {
      token: read,
      body: { range: { field: 'created_at', start, end }, group_by: [{ field: 'created_at', date_histogram_min_interval: 'month', date_histogram_buckets: 1 }], metrics: ['nps'], compare },
    });

  it('February against the previous period is February against the whole of January', async () => {
    const res = await monthly('2024-02-01T00:00:00Z', '2024-02-29T23:59:59Z', 'previous_period');
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const [c] = res.body.comparisons;
    expect(c.range).to.deep.equal({ start: '2024-01-01T00:00:00.000000Z', end: '2024-01-31T23:59:59.000000Z' });
    // January: 2 promotors, 1 detractor = 33.33; February: 1 promotor = 100.
    expect(c.hits.total.value).to.equal(3);
    expect(c.aggregations.buckets).to.have.length(1);
    expect(c.aggregations.buckets[0].key).to.equal('2024-01-01T00:00:00.000000Z');
    expect(c.aggregations.buckets[0].doc_count).to.equal(3);
    expect(c.metrics.nps).to.include({ score: 33.33, promotor: 2, detractor: 1, total: 3, delta: 66.67 });
    expect(res.body.metrics.nps).to.include({ score: 100, total: 1 });
  });

  it('a whole February against the previous year holds February 29', async () => {
    const res = await monthly('2025-02-01T00:00:00Z', '2025-02-28T23:59:59Z', 'previous_year');
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const [c] = res.body.comparisons;
    expect(c.range).to.deep.equal({ start: '2024-02-01T00:00:00.000000Z', end: '2024-02-29T23:59:59.000000Z' });
    expect(c.hits.total.value).to.equal(1);
    expect(c.metrics.nps).to.include({ score: 100, promotor: 1, total: 1, delta: -200 });
  });

  it('a completion rate is rounded half up exactly: 57 of 800 is 0.0713', async () => {
    const res = await svc.request('SEARCH', '/1.0/survey/*/response/aggregation', {
      token: read,
      body: { range: { field: 'created_at', start: '2023-06-01T00:00:00Z', end: '2023-06-01T23:59:59Z' }, group_by: [{ field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 1 }], metrics: ['completion'] },
    });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.metrics.completion).to.include({ fully_completed: 57, partially_completed: 743, rate: 0.0713 });
    expect(res.body.aggregations.buckets[0].metrics.completion.rate).to.equal(0.0713);
  });
});
