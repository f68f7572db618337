import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { compiled } from '../../src/clickhouse/sql.ts';
import { QUERY_SETTINGS, selectionOf } from '../../src/responses/compile.ts';
import { checkedSql } from '../../src/responses/rollups/pending.ts';
import { runSummary } from '../../src/responses/summary.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * The pending marks ride in the rollup read's own query (rollups/pending.ts checkedSql) only
 * because the engine takes the parts of the set's table before those of the read's tables. This
 * holds the engine to it: the read waits inside its analysis (a scalar subquery that sleeps,
 * which the engine runs while it analyses the query, on the left of the read's own FROM), marks
 * and slice rows are written meanwhile, and the set must miss the mark while the read sees the
 * new row. An engine that took the read's parts first, or every part once the analysis is over,
 * fails it.
 */
describe('the pending set beside a rollup read, in one query', function () {
  this.timeout(120_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.close());

  const hour = '2024-03-10 10:00:00.000000';
  /** A slice row claiming `responses` fully completed responses. */
  const sliceRow = async (orgId: string, survey: string, responses: number, span = 'hour', start = hour) =>
    svc.client.command({
      query: `INSERT INTO survey_rollup (org_id, span, survey_id, start, version, g_channel_id, g_completion, g_end_reason, g_language, g_support, g_responses, g_nps, g_csat, g_ces)
        VALUES ({org:UUID}, {span:String}, {survey:UUID}, {start:DateTime64(6, 'UTC')}, now64(9, 'UTC'), [{channel:UUID}], ['fully_completed'], ['completed'], ['en'], [[]], [{n:UInt64}], [map()], [map()], [map()])`,
      query_params: { org: orgId, span, survey, start, channel: randomUUID(), n: responses },
    });

  it('takes the set\'s parts before the read\'s: a mark and a slice row written while the read is analysed are missed by the set and seen by the read', async () => {
    const orgId = randomUUID();
    const survey = randomUUID();
    await sliceRow(orgId, survey, 1);
    // The read: a left side that sleeps while the query is analysed, then the slice rows.
    const read = compiled(
      'SELECT r.n AS n FROM (SELECT (SELECT sleep(2)) AS z) AS s CROSS JOIN ' +
        "(SELECT toUInt64(sum(t_rows)) AS n FROM survey_rollup FINAL WHERE org_id = {org:UUID} AND span = 'hour') AS r",
      { org: orgId },
    );
    const q = checkedSql(read, orgId);
    const running = svc.client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: QUERY_SETTINGS }).then((rs) => rs.json<{ n: number; pending_surveys: string[]; pending_hours: string[] }>());
    await new Promise((r) => setTimeout(r, 700));
    await svc.client.insert({ table: 'survey_rollup_pending', values: [{ org_id: orgId, survey_id: survey, hour, pending: 1 }], format: 'JSONEachRow' });
    await sliceRow(orgId, survey, 100);
    const [row] = await running;
    expect(row.pending_surveys, 'the set was taken before the mark').to.deep.equal([]);
    expect(Number(row.n), 'the read was taken after the new slice row').to.equal(100);
  });

  it('the same with the set as the first branch of a UNION ALL (a read that names its columns): the mark missed, the new slice row seen', async () => {
    const orgId = randomUUID();
    const survey = randomUUID();
    await sliceRow(orgId, survey, 1);
    const read = {
      ...compiled(
        'SELECT r.n AS n FROM (SELECT (SELECT sleep(2)) AS z) AS s CROSS JOIN ' +
          "(SELECT toUInt64(sum(t_rows)) AS n FROM survey_rollup FINAL WHERE org_id = {org:UUID} AND span = 'hour') AS r",
        { org: orgId },
      ),
      columns: ['n'],
    };
    const q = checkedSql(read, orgId);
    expect(q.sql).to.match(/^\(SELECT 0 AS read_row, .* FROM survey_rollup_pending .*\) UNION ALL \(/);
    const running = svc.client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: QUERY_SETTINGS }).then((rs) => rs.json<{ read_row: number; n: number | null }>());
    await new Promise((r) => setTimeout(r, 700));
    await svc.client.insert({ table: 'survey_rollup_pending', values: [{ org_id: orgId, survey_id: survey, hour, pending: 1 }], format: 'JSONEachRow' });
    await sliceRow(orgId, survey, 100);
    const rows = await running;
    expect(rows.filter((r) => Number(r.read_row) === 0), 'the set was taken before the mark').to.deep.equal([]);
    expect(rows.filter((r) => Number(r.read_row) === 1).map((r) => Number(r.n)), 'the read was taken after the new slice row').to.deep.equal([100]);
  });

  it('a read compiled with a set that missed a mark is compiled again with the set its query carried: the pending slice is read raw', async () => {
    // An org with no response whose slice rows lie: its hour, day and month claim 100 responses.
    const orgId = randomUUID();
    const survey = randomUUID();
    await sliceRow(orgId, survey, 100);
    await sliceRow(orgId, survey, 100, 'day', '2024-03-10 00:00:00.000000');
    await sliceRow(orgId, survey, 100, 'month', '2024-03-01 00:00:00.000000');
    const queries: string[] = [];
    const run = async <T>(q: { sql: string; params: Readonly<Record<string, unknown>> }): Promise<T[]> => {
      queries.push(q.sql);
      return (await svc.client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: QUERY_SETTINGS })).json<T>();
    };
    const scope = selectionOf(orgId, '*', { filters_bool: 'AND', filters: [], range: undefined });
    const completion = async () => Number((await runSummary(run, scope))[0].completion_counts.fully_completed ?? 0);
    expect(await completion(), 'the rollup serves what it holds').to.equal(100);
    expect(queries.length).to.equal(1);
    // Its hour marked: the first query, compiled with nothing pending, carries the mark; the
    // second, compiled with it, reads the hour raw (no response) and the rest of its day and
    // month from their hour rows (none).
    await svc.client.insert({ table: 'survey_rollup_pending', values: [{ org_id: orgId, survey_id: survey, hour, pending: 1 }], format: 'JSONEachRow' });
    queries.length = 0;
    expect(await completion()).to.equal(0);
    expect(queries.length, 'the read with the set beside it, then the read compiled with that set').to.equal(2);
    // The next read guesses the slice pending (seen lately): one query, the hour read raw.
    queries.length = 0;
    expect(await completion()).to.equal(0);
    expect(queries.length).to.equal(1);
    // Taken back behind this process's back: the guess still names it (read raw, exact), one query.
    await svc.client.insert({ table: 'survey_rollup_pending', values: [{ org_id: orgId, survey_id: survey, hour, pending: -1 }], format: 'JSONEachRow' });
    queries.length = 0;
    expect(await completion()).to.equal(0);
    expect(queries.length).to.equal(1);
  });
});
