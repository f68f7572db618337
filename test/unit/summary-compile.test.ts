import { expect } from 'chai';
import type { ResponseSelection } from '../../src/responses/compile.ts';
import { selectionSchema } from '../../src/responses/filters.ts';
import { DASHBOARD_QUERY_CACHE_SETTINGS, POLL_WINDOW_MS } from '../../src/query/request-cache.ts';
import { compileSummary, roundRatio, shapeSummary, type SummaryRow } from '../../src/responses/summary.ts';
import { DomainError, parseOrThrow } from '../../src/errors.ts';
import { checkedSql } from '../../src/responses/rollups/pending.ts';
import { rollupCover } from '../../src/responses/rollups/read.ts';

const ORG = '11111111-1111-4111-8111-111111111111';
const SURVEY = 'aaaaaaaa-0000-4000-8000-000000000001';
const DT = "DateTime64(6, 'UTC')";

const counted = (column: string) => `sumMap(mapFromArrays(${column}, arrayMap(x -> toUInt64(1), ${column})))`;

describe('summary: compileSummary', () => {
  const cases: Array<{ name: string; scope: ResponseSelection; where: string; params: Record<string, unknown> }> = [
    {
      name: 'all surveys, no range',
      scope: { orgId: ORG, surveyIds: '*', filtersBool: 'AND', filters: [] },
      where: 'org_id = {p0:UUID}',
      params: { p0: ORG },
    },
    {
      name: 'surveys, range and a completion filter',
      scope: {
        orgId: ORG,
        surveyIds: [SURVEY],
        filtersBool: 'OR',
        filters: [{ kind: 'completion', op: 'eq', negate: false, values: ['fully_completed'] }],
        range: { start: '2024-01-01 00:00:00.000000', end: '2024-01-31 23:59:59.999999' },
      },
      where: `org_id = {p0:UUID} AND survey_id IN {p1:Array(UUID)} AND created_at >= {p2:${DT}} AND created_at <= {p3:${DT}} AND (completion = {p4:String})`,
      params: { p0: ORG, p1: [SURVEY], p2: '2024-01-01 00:00:00.000000', p3: '2024-01-31 23:59:59.999999', p4: 'fully_completed' },
    },
  ];
  for (const c of cases) {
    it(`one query, org first: ${c.name}`, () => {
      const q = compileSummary(c.scope);
      const grouped =
        'SELECT completion, end_reason, language, hf_support, count() AS group_rows, ' +
        `${counted('nps_scores')} AS group_nps, ${counted('csat_scores')} AS group_csat, ${counted('ces_scores')} AS group_ces ` +
        `FROM survey_responses FINAL WHERE ${c.where} GROUP BY completion, end_reason, language, hf_support`;
      // The part folds its groups into b_* maps; the outer query adds the parts up and drops "".
      const folded =
        'SELECT ' +
        [
          'sumMap(group_nps) AS b_nps',
          'sumMap(group_csat) AS b_csat',
          'sumMap(group_ces) AS b_ces',
          'sumMap(map(toString(completion), group_rows)) AS b_completion',
          'sumMap(map(toString(end_reason), group_rows)) AS b_end_reason',
          'sumMap(map(toString(language), group_rows)) AS b_language',
          "sumMap(mapFromArrays(CAST(hf_support, 'Array(String)'), arrayMap(x -> group_rows, hf_support))) AS b_support",
        ].join(', ') +
        ` FROM (${grouped})`;
      expect(q.sql).to.equal(
        'SELECT ' +
          [
            'sumMap(b_nps) AS nps_counts',
            'sumMap(b_csat) AS csat_counts',
            'sumMap(b_ces) AS ces_counts',
            'sumMap(b_completion) AS completion_counts',
            'mapFilter((k, v) -> notEmpty(k), sumMap(b_end_reason)) AS end_reason_counts',
            'mapFilter((k, v) -> notEmpty(k), sumMap(b_language)) AS language_counts',
            'sumMap(b_support) AS support_counts',
          ].join(', ') +
          ` FROM (${folded})`,
      );
      expect(q.params).to.deep.equal(c.params);
      expect(Object.isFrozen(q)).to.equal(true);
    });
  }

  it('from the rollup: the columns named, so that the pending set rides beside it in a UNION ALL, `map()` standing in for each map on the mark rows', () => {
    const scope: ResponseSelection = { orgId: ORG, surveyIds: '*', filtersBool: 'AND', filters: [], range: { start: '2024-01-01 00:00:00.000000', end: '2024-01-31 12:30:00.000000' } };
    const q = compileSummary(scope, rollupCover(scope.range, { org: false, slices: [] }, 'month')!);
    const maps = ['nps_counts', 'csat_counts', 'ces_counts', 'completion_counts', 'end_reason_counts', 'language_counts', 'support_counts'];
    expect(q.columns).to.deep.equal(maps);
    const checked = checkedSql(q, ORG);
    expect(checked.sql).to.match(/^\(SELECT 0 AS read_row, .* FROM survey_rollup_pending .*\) UNION ALL \(SELECT 1, '', '', 0, /);
    expect(checked.sql).to.contain(maps.map((c) => `map() AS ${c}`).join(', '));
    expect(checked.sql).to.contain(`SELECT 1, '', '', 0, ${maps.join(', ')} FROM (${q.sql})`);
  });

  it('the body is the scope part; size and offset are accepted and ignored; bad filters are a 400', () => {
    const parsed = parseOrThrow(selectionSchema, { size: 5, offset: 10, filters: [] });
    expect(parsed).to.deep.equal({ filters_bool: 'AND', filters: [] });
    try {
      parseOrThrow(selectionSchema, { filters: [{ type: 'response', key: 'completion', operator: 'contains', value: 'x' }] });
      expect.fail('expected a 400');
    } catch (err) {
      expect(err).to.be.instanceOf(DomainError);
      expect((err as DomainError).issues?.[0].path).to.equal('filters[0].operator');
    }
  });

  it('exports the polling cache settings (a 3 s window)', () => {
    expect(POLL_WINDOW_MS).to.equal(3000);
    expect(DASHBOARD_QUERY_CACHE_SETTINGS).to.deep.equal({ use_query_cache: 1, query_cache_ttl: 3, query_cache_nondeterministic_function_handling: 'save' });
  });
});

describe('summary: shapeSummary', () => {
  const zeros = (from: number, to: number) => Object.fromEntries(Array.from({ length: to - from + 1 }, (_, i) => [String(from + i), 0]));

  it('no responses: every key present with zeros, averages and nps_score null', () => {
    for (const row of [undefined, { nps_counts: {}, csat_counts: {}, ces_counts: {}, completion_counts: {}, end_reason_counts: {}, language_counts: {}, support_counts: {} }]) {
      expect(shapeSummary(row)).to.deep.equal({
        ces_avg: null,
        ces_details: zeros(1, 7),
        csat_avg: null,
        csat_details: zeros(1, 5),
        nps_details: zeros(0, 10),
        nps_groups: { detractor: 0, neutral: 0, promotor: 0, total: 0 },
        nps_score: null,
        completion: { not_started: 0, partially_completed: 0, fully_completed: 0 },
        end_reasons: {},
        languages: {},
        supports: {},
      });
    }
  });

  it('groups NPS, scores and averages, rounds half away from zero, sorts object keys', () => {
    const row: SummaryRow = {
      nps_counts: { '0': 1, '6': 2, '7': 1, '8': '1', '9': 1, '10': 1 }, // numbers may come as text
      csat_counts: { '1': 1, '2': 2 },
      ces_counts: { '7': 3 },
      completion_counts: { fully_completed: 4, not_started: 1 },
      end_reason_counts: { expired: 1, closed: 2 },
      language_counts: { fr: 1, en: 3 },
      support_counts: { mobile: 2, desktop: 1 },
    };
    const s = shapeSummary(row);
    expect(s.nps_details).to.deep.equal({ ...zeros(0, 10), '0': 1, '6': 2, '7': 1, '8': 1, '9': 1, '10': 1 });
    expect(s.nps_groups).to.deep.equal({ detractor: 3, neutral: 2, promotor: 2, total: 7 });
    expect(s.nps_score).to.equal(-14.29); // (2 - 3) / 7 * 100 = -14.2857...
    expect(s.csat_avg).to.equal(1.67); // 5 / 3
    expect(s.ces_avg).to.equal(7);
    expect(s.completion).to.deep.equal({ not_started: 1, partially_completed: 0, fully_completed: 4 });
    expect(Object.keys(s.end_reasons)).to.deep.equal(['closed', 'expired']);
    expect(Object.keys(s.languages)).to.deep.equal(['en', 'fr']);
    expect(s.supports).to.deep.equal({ desktop: 1, mobile: 2 });
  });

  it('nps_score sign: all promotors 100, all detractors -100, balanced 0 (not -0)', () => {
    const withNps = (nps: Record<string, number>) => shapeSummary({ nps_counts: nps, csat_counts: {}, ces_counts: {}, completion_counts: {}, end_reason_counts: {}, language_counts: {}, support_counts: {} }).nps_score;
    expect(withNps({ '10': 3 })).to.equal(100);
    expect(withNps({ '0': 2, '6': 1 })).to.equal(-100);
    expect(Object.is(withNps({ '0': 1, '9': 1 }), 0)).to.equal(true);
    expect(withNps({ '7': 4 })).to.equal(0);
    expect(withNps({ '9': 2, '7': 1 })).to.equal(66.67);
  });

  const rounding: Array<[number, number, number]> = [
    [1, 3, 0.33],
    [2, 3, 0.67],
    [-2, 3, -0.67],
    [1, 8, 0.13], // 0.125 -> half away from zero
    [-1, 8, -0.13],
    [1005, 1000, 1.01], // 1.005 exactly: no float drift to 1.00
    [-1005, 1000, -1.01],
    [0, 5, 0],
    [700, 7, 100],
  ];
  for (const [num, den, want] of rounding) {
    it(`roundRatio(${num}, ${den}) = ${want}`, () => {
      expect(roundRatio(num, den)).to.equal(want);
    });
  }
});
