import { expect } from 'chai';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { QUERY_SETTINGS, selectionOf } from '../../src/responses/compile.ts';
import { compileSearchCount, wholeWeeksOf, weekPartitionId } from '../../src/responses/search-sql.ts';
import { windowStartsBefore } from '../../src/query/page-windows.ts';
import { parseOrThrow } from '../../src/errors.ts';
import { selectionSchema } from '../../src/responses/filters.ts';
import { formatDbMicros, parseInstantMicros } from '../../src/time/iso.ts';
import { startTestService, type TestService } from './harness.ts';
import { writeWithLaterUpserts } from './upserts.ts';

/**
 * The search count of a range holding whole weeks counts those weeks by partition, without the
 * created_at test (search-sql.ts compileWeekSplitCount). It relies on survey_responses being
 * partitioned by toMonday(created_at), whose partition id is the Monday as YYYYMMDD: the first
 * test fails if that changes. Then the count row (total, window counts, and `newest` where search.ts
 * reads it) must equal a plain count over the same rows with the range tested on every row, for
 * random ranges (Monday boundaries to the microsecond, edge weeks, empty ranges, ranges without
 * responses), random window starts (inside weeks, on Mondays, before the range), one or two
 * surveys, alias values with `@`, non-ASCII letters and NULs, and no filter; and the HTTP search
 * must answer the total and page a JS reference computes.
 */
type Rec = Record<string, any>;
const DAY = 86_400_000_000n;
const WEEK = 7n * DAY;
/** Monday 2024-01-01 00:00 UTC, µs. */
const MONDAY = BigInt(Date.UTC(2024, 0, 1)) * 1000n;
const SURVEYS = [randomUUID(), randomUUID()];
const NAMES = ['User-42@Example.com', 'user-420@x.io', 'Ölaf.Müller@straße.de', 'ÉCOLE-ñandú', 'beef-1234', 'plain name', 'nul\u0000Name', 'x'];
const VALUES = ['user-42', 'USER-42@', '42@', '@', '-4', 'ü', 'école', 'müller@', 'l\u0000n', 'x', 'no such alias'];

const iso = (us: bigint) => `${formatDbMicros(us).replace(' ', 'T')}Z`;

function record(id: string, survey: string, createdUs: bigint, aliases: string[], bump: number): Rec {
  const created = iso(createdUs);
  return {
    id, doc_type: 'response', channel_id: survey, respondent_id: id, respondent_aliases: aliases, survey_id: survey, scenario_id: survey,
    language: 'en', locale: 'en-US', question_id_path: 'q', question_correlation_id_path: 'qc', action_id_path: 'a', action_correlation_id_path: 'ac',
    group_ids: [], hidden_fields: [], emotions: { fear: null, sadness: null, anger: null, joy: null }, answers: [],
    completion: 'fully_completed', active: false, end_reason: 'completed', ended_at: created,
    created_at: created, updated_at: iso(createdUs + BigInt(bump)), last_answer_at: created,
  };
}

describe('search count: whole weeks counted by partition, the same row as testing the range on every row', function () {
  this.timeout(300_000);
  let svc: TestService;
  let read: string;
  let latest: Rec[] = [];

  before(async () => {
    svc = await startTestService();
    const write = await svc.token(['responses:write']);
    read = await svc.token(['responses:read']);
    // 10 weeks from Monday 2024-01-01, plus responses exactly on the Mondays' first and the
    // Sundays' last microsecond.
    const times = fc.sample(fc.bigInt({ min: 0n, max: 10n * WEEK - 1n }), { numRuns: 260, seed: 267 }).map((t) => MONDAY + t);
    for (let w = 0n; w <= 10n; w++) times.push(MONDAY + w * WEEK, MONDAY + w * WEEK - 1n);
    // Distinct times: the page order between equal times is the engine's order of UUIDs.
    times.splice(0, times.length, ...new Set(times));
    const aliasSets = fc.sample(fc.array(fc.oneof(fc.constantFrom(...NAMES), fc.constant(null).map(() => randomUUID())), { maxLength: 3 }), { numRuns: times.length, seed: 268 });
    const first = times.map((t, i) => record(randomUUID(), SURVEYS[i % 2], t, aliasSets[i], 1));
    // Upserts in a later part with other aliases: FINAL must answer the newer version.
    const upserts = first.filter((_, i) => i % 4 === 0).map((r, k) => record(r.id, r.survey_id, parseInstantMicros(r.created_at)!, aliasSets[(k * 5 + 3) % aliasSets.length], 2));
    latest = await writeWithLaterUpserts(svc, write, first, upserts, 130);
  });
  after(() => svc?.close());

  it('survey_responses is partitioned by toMonday(created_at), each partition id the Monday as YYYYMMDD', async () => {
    const rs = await svc.client.query({ query: "SELECT partition_key FROM system.tables WHERE database = currentDatabase() AND name = 'survey_responses'", format: 'JSONEachRow' });
    expect(await rs.json()).to.deep.equal([{ partition_key: 'toMonday(created_at)' }]);
    const parts = await svc.client.query({
      query: 'SELECT DISTINCT _partition_id AS p, toString(created_at) AS c FROM survey_responses WHERE org_id = {org:UUID}',
      query_params: { org: svc.orgId }, format: 'JSONEachRow',
    });
    const rows = await parts.json<{ p: string; c: string }>();
    expect(rows.length).to.be.greaterThan(200);
    for (const row of rows) {
      const t = parseInstantMicros(row.c)!;
      const monday = MONDAY + ((t - MONDAY) / WEEK - (t < MONDAY ? 1n : 0n)) * WEEK;
      expect(row.p, row.c).to.equal(weekPartitionId(monday));
    }
  });

  it('org_id is LowCardinality(UUID), still first in the sorting key (schema/281): the org test reads a dictionary index a row', async () => {
    const rs = await svc.client.query({
      query: "SELECT type, is_in_sorting_key AS k FROM system.columns WHERE database = currentDatabase() AND table = 'survey_responses' AND name = 'org_id'",
      format: 'JSONEachRow',
    });
    expect(await rs.json()).to.deep.equal([{ type: 'LowCardinality(UUID)', k: 1 }]);
    const keys = await svc.client.query({ query: "SELECT sorting_key FROM system.tables WHERE database = currentDatabase() AND name = 'survey_responses'", format: 'JSONEachRow' });
    expect((await keys.json<{ sorting_key: string }>())[0].sorting_key).to.match(/^org_id, /);
  });

  it('the same count row as the range tested on every row, for random ranges, windows, surveys and filters', async () => {
    const edge = fc.oneof(
      fc.bigInt({ min: -WEEK, max: 11n * WEEK }).map((t) => MONDAY + t),
      fc.tuple(fc.integer({ min: -1, max: 11 }), fc.constantFrom(-1n, 0n, 1n)).map(([w, d]) => MONDAY + BigInt(w) * WEEK + d),
    );
    const windows = fc.oneof(
      fc.constant<bigint[] | 'anchored'>('anchored'),
      fc.array(edge, { maxLength: 5 }).map((ws) => ws.sort((a, b) => (a < b ? 1 : a > b ? -1 : 0))),
    );
    const filter = fc.option(fc.constantFrom(...VALUES), { nil: undefined });
    const surveys = fc.constantFrom<string[] | '*'>('*', [SURVEYS[0]], SURVEYS);
    let split = 0;
    await fc.assert(fc.asyncProperty(edge, edge, windows, filter, surveys, async (a, b, ws, value, surveyIds) => {
      const [lo, hi] = a <= b ? [a, b] : [b, a];
      const range = { start: formatDbMicros(lo), end: formatDbMicros(hi) };
      const starts = ws === 'anchored' ? windowStartsBefore(hi) : ws.map(formatDbMicros);
      const filters = parseOrThrow(selectionSchema, { filters: value === undefined ? [] : [{ type: 'response', key: 'respondent_alias', operator: 'contains', value }] }).filters;
      const selection = { ...selectionOf(svc.orgId, surveyIds, { filters_bool: 'AND', filters } as never), range };
      if (wholeWeeksOf(range, starts).length > 0) split++;
      const q = compileSearchCount(selection, starts);
      const got = (await (await svc.client.query({ query: q.sql, query_params: { ...q.params }, format: 'JSONEachRow', clickhouse_settings: QUERY_SETTINGS })).json<Rec>())[0];
      // The reference: every row's created_at tested, the filter as JS computes it.
      const alias = (r: Rec) => value === undefined || (r.respondent_aliases as string[]).some((x) => x.toLowerCase().includes(value.toLowerCase()));
      const rows = latest.filter((r) => {
        const t = parseInstantMicros(r.created_at)!;
        return t >= lo && t <= hi && (surveyIds === '*' || surveyIds.includes(r.survey_id)) && alias(r);
      }).map((r) => parseInstantMicros(r.created_at)!);
      const label = `${JSON.stringify(range)} windows ${JSON.stringify(starts)} ${JSON.stringify(value)} ${JSON.stringify(surveyIds)}`;
      expect(Number(got.total), label).to.equal(rows.length);
      starts.forEach((w, i) => expect(Number(got[`w${i}`]), `${label} w${i}`).to.equal(rows.filter((t) => t >= parseInstantMicros(w)!).length));
      // `newest` is read only when no match is at or after the last window start (search.ts).
      if (starts.length > 0 && Number(got[`w${starts.length - 1}`]) === 0) {
        const newest = rows.reduce((m, t) => (t > m ? t : m), 0n);
        expect(parseInstantMicros(got.newest), `${label} newest`).to.equal(newest);
      }
      // And the plain SQL on the engine: the same total.
      const ref = await svc.client.query({
        query: `SELECT count() AS n FROM survey_responses FINAL WHERE org_id = {org:UUID} AND created_at >= {lo:DateTime64(6, 'UTC')} AND created_at <= {hi:DateTime64(6, 'UTC')}` +
          `${surveyIds === '*' ? '' : ' AND survey_id IN {s:Array(UUID)}'}${value === undefined ? '' : ' AND arrayExists(a -> positionCaseInsensitiveUTF8(a, {v:String}) > 0, respondent_aliases)'}`,
        query_params: { org: svc.orgId, lo: range.start, hi: range.end, s: surveyIds === '*' ? [] : surveyIds, v: value ?? '' }, format: 'JSONEachRow',
      });
      expect(Number((await ref.json<{ n: string }>())[0].n), `${label} (plain SQL)`).to.equal(rows.length);
    }), { numRuns: 150, seed: 267 });
    // Most ranges above hold a whole week: the split is what was tested.
    expect(split).to.be.greaterThan(40);
  });

  it('the HTTP search answers the total and the page of the JS reference over ranges holding whole weeks', async () => {
    const byOrder = (x: Rec, y: Rec) => (x.created_at < y.created_at ? 1 : x.created_at > y.created_at ? -1 : x.id < y.id ? 1 : -1);
    for (const [from, to, value] of [[0n, 10n * WEEK - 1n, 'user-42'], [3n * DAY, 9n * WEEK + 2n * DAY, '@'], [WEEK, 3n * WEEK - 1n, 'ü'], [2n * WEEK + 1n, 6n * WEEK, undefined]] as const) {
      const range = { start: iso(MONDAY + from), end: iso(MONDAY + to) };
      const filters = value === undefined ? [{ type: 'response', key: 'completion', operator: 'eq', value: 'fully_completed' }, { type: 'response', key: 'respondent_alias', operator: 'not_contains', value: 'zzz' }] : [{ type: 'response', key: 'respondent_alias', operator: 'contains', value }];
      const expected = latest.filter((r) => {
        const t = parseInstantMicros(r.created_at)!;
        return t >= MONDAY + from && t <= MONDAY + to && (value === undefined || (r.respondent_aliases as string[]).some((x) => x.toLowerCase().includes(value.toLowerCase())));
      }).sort(byOrder);
      for (const [offset, size] of [[0, 5], [3, 20], [0, 1000]]) {
        const res = await svc.request('SEARCH', `/1.0/survey/${SURVEYS.join(',')}/response`, { token: read, body: { range, filters, offset, size } });
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        const label = `${JSON.stringify(range)} ${value} ${offset} ${size}`;
        expect(res.body.hits.total.value, label).to.equal(expected.length);
        expect(res.body.hits.responses.map((r: Rec) => r.id), label).to.deep.equal(expected.slice(offset, offset + size).map((r) => r.id));
      }
    }
  });
});
