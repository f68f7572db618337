import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { CompiledQuery, RunQuery } from '../../src/clickhouse/sql.ts';
import { formatDbMicros, parseInstantMicros } from '../../src/query/histogram.ts';
import { MAX_RELEASE_MARKS, releaseMarks, releaseMarksRead, releasesForSeries, releasesOfRows, type MarkedReleaseRow } from '../../src/releases/marks.ts';
import { runAggregationRequest, shapeAggregationRequest } from '../../src/responses/aggregation-request.ts';
import { planLevels } from '../../src/responses/aggregation.ts';
import { QUERY_SETTINGS, selectionOf } from '../../src/responses/compile.ts';
import type { GroupByRule } from '../../src/responses/group-by.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * The releases of a date histogram ride in the grouped query's own request when its form names its
 * columns (src/query/beside.ts), else they are read alone beside it. Either way the marks are those
 * of releasesForSeries (its window, its order, its limit), checked here on releases that tie on
 * released_at past the limit, for every form of the grouped read.
 */
describe('releases on date histograms: read in the grouped query or beside it, the same marks', function () {
  this.timeout(120_000);
  let svc: TestService;
  let read: string;
  const TIE = '2024-03-04 12:00:00.000';
  let queries: CompiledQuery[] = [];
  let alone: CompiledQuery[] = [];
  const runner = (log: () => CompiledQuery[]): RunQuery => async <T>(q: CompiledQuery) => {
    log().push(q);
    return (await svc.client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: QUERY_SETTINGS })).json<T>();
  };
  const run = runner(() => queries);
  const fresh = runner(() => alone);

  before(async () => {
    svc = await startTestService();
    read = await svc.token(['responses:read']);
    const write = await svc.token(['responses:write']);
    // A few responses, so the rollup-served forms have slices to read.
    const records = Array.from({ length: 40 }, (_, i) => {
      const created = new Date(Date.UTC(2024, 2, 1) + i * 5 * 3_600_000).toISOString();
      return {
        id: randomUUID(), channel_id: randomUUID(), respondent_id: randomUUID(), survey_id: randomUUID(), language: 'en',
        completion: i % 3 === 0 ? 'fully_completed' : 'partially_completed', active: true, end_reason: '', ended_at: '',
        created_at: created, updated_at: created, last_answer_at: '', hidden_fields: [{ key: 'plan', t: 0, v_s: i % 2 ? 'a' : 'b' }], answers: [],
      };
    });
    const res = await svc.request('POST', '/1.0/survey/response', { token: write, body: records });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    // More releases at one millisecond than a histogram lists: which are kept is decided by the
    // order on (released_at, id text) and the limit; a few others around them, one outside.
    const rows = [
      ...Array.from({ length: MAX_RELEASE_MARKS + 20 }, (_, i) => ({ released_at: TIE, name: `tie ${i}` })),
      { released_at: '2024-03-02 08:00:00.000', name: 'before' },
      { released_at: '2024-03-09 00:00:00.000', name: 'after' },
      { released_at: '2024-05-01 00:00:00.000', name: 'outside' },
    ].map((r) => ({ org_id: svc.orgId, id: randomUUID(), version: '1.0', description: '', tags: [], created_at: r.released_at, ...r }));
    await svc.client.insert({ table: 'releases', values: rows, format: 'JSONEachRow' });
    await svc.settle();
  });
  after(() => svc.close());

  it('releaseMarksRead lists the releases releasesForSeries lists, in its order, cut at the same one', async () => {
    const range = { start: '2024-03-01 00:00:00.000000', end: '2024-03-10 00:00:00.000000' };
    const plans = planLevels([{ kind: 'date', field: 'created_at', minInterval: 'day', buckets: 10 } as GroupByRule], range, {});
    const expected = (await releasesForSeries(fresh, svc.orgId, plans)).map(({ id, name, version, released_at }) => ({ id, name, version, released_at }));
    const got = releasesOfRows(await fresh<MarkedReleaseRow>(releaseMarksRead(svc.orgId, plans)!));
    expect(got).to.have.length(MAX_RELEASE_MARKS);
    expect(got).to.deep.equal(expected);
    expect(got[0].name).to.equal('before');
  });

  const day = { field: 'created_at', date_histogram_min_interval: 'day', date_histogram_buckets: 10 };
  const forms: Array<[string, Record<string, unknown>[], string, boolean]> = [
    // [form, group_by, range start, whether the grouped query carries the releases]
    ['dense, raw (a range starting inside an hour)', [day, { field: 'completion' }], '2024-03-01T00:30:00Z', true],
    ['dense, rollup-served (whole days)', [day, { field: 'completion' }], '2024-03-01T00:00:00Z', true],
    ['ranked, raw (a hidden field level: the query does not name its columns)', [day, { field: 'hidden_field', hidden_field_key: 'plan' }], '2024-03-01T00:30:00Z', false],
  ];
  for (const [form, groupBy, start, carried] of forms) {
    it(`${form}: the marks of releasesForSeries, ${carried ? 'in the grouped query' : 'read alone'}`, async () => {
      const body = { range: { field: 'created_at', start, end: '2024-03-10T23:59:59Z' }, group_by: groupBy };
      const res = await svc.request('SEARCH', '/1.0/survey/*/response/aggregation', { token: read, body });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const range = { start: formatDbMicros(parseInstantMicros(start)!), end: formatDbMicros(parseInstantMicros(body.range.end)!) };
      const rules = groupBy.map((r) => (r.field === 'created_at' ? { kind: 'date', field: 'created_at', minInterval: 'day', buckets: 10 } : r.field === 'completion' ? { kind: 'completion', field: 'completion' } : { kind: 'hidden_field', field: 'hidden_field', key: 'plan' })) as GroupByRule[];
      const plans = planLevels(rules, range, {});
      expect(res.body.aggregations.releases).to.deep.equal(releaseMarks(await releasesForSeries(fresh, svc.orgId, plans), plans[0]!));

      // The same request through runAggregationRequest, counting the queries of each runner.
      queries = [];
      alone = [];
      const selection = selectionOf(svc.orgId, '*', { filters_bool: 'AND', filters: [], range: { field: 'created_at', ...range } });
      const rows = await runAggregationRequest(run, selection, { rules }, { fresh });
      const { took: _t, ...shaped } = shapeAggregationRequest({ rules }, rows, 0);
      const { took: _u, ...answered } = res.body;
      expect(shaped).to.deep.equal(answered);
      expect(alone.filter((q) => /FROM releases/.test(q.sql)), 'a releases query of its own').to.have.length(carried ? 0 : 1);
      expect(queries.filter((q) => /FROM releases/.test(q.sql)), 'a grouped query carrying the releases').to.have.length(carried ? 1 : 0);
    });
  }
});
