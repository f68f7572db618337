import { expect } from 'chai';
import fc from 'fast-check';
import type { AggregationRow } from '../../src/responses/aggregation.ts';
import { maxPeriodRows, splitPeriods } from '../../src/responses/aggregation-periods.ts';
import type { GroupByRule } from '../../src/responses/group-by.ts';
import { parseInstantMicros, planHistogram } from '../../src/query/histogram.ts';
import { MAX_TERMS_BUCKETS } from '../../src/query/ranked-buckets.ts';

const µs = (iso: string) => parseInstantMicros(iso)!;
const completion: GroupByRule = { kind: 'completion', field: 'completion' };
const survey: GroupByRule = { kind: 'survey_id', field: 'survey_id' };
const byDay: GroupByRule = { kind: 'date', field: 'created_at', minInterval: 'day', buckets: 7 };
const week = planHistogram(µs('2024-01-01T00:00:00Z'), µs('2024-01-07T23:59:59.999999Z'), 'day', 7);

describe('aggregation periods (pure)', () => {
  it('splits the periods\' rows back into one set per period, with the depths and keys of a single period', () => {
    fc.assert(fc.property(fc.integer({ min: 2, max: 6 }), fc.integer({ min: 1, max: 3 }), fc.array(fc.tuple(fc.nat(), fc.nat(), fc.nat({ max: 3 })), { maxLength: 40 }), (periods, levels, seeds) => {
      // What each period's own query would have returned: depth d rows with keys k1..kd (deeper keys rolled up to '').
      const own: AggregationRow[][] = Array.from({ length: periods }, () => []);
      const combined: AggregationRow[] = [{ depth: 0, doc_count: 0, other_doc_count: 0, ...Object.fromEntries(Array.from({ length: levels + 1 }, (_, i) => [`k${i + 1}`, i === 0 ? 0 : ''])) }];
      for (const [p0, key, d0] of seeds) {
        const p = p0 % periods;
        const depth = d0 % (levels + 1);
        const keys = Array.from({ length: levels }, (_, i) => (i < depth ? `v${key % 5}-${i}` : ''));
        const row: AggregationRow = { depth, doc_count: key, other_doc_count: 0, m_nps: `x${key}` };
        keys.forEach((k, i) => (row[`k${i + 1}`] = k));
        own[p].push(row);
        const tagged: AggregationRow = { ...row, depth: depth + 1, k1: p };
        keys.forEach((k, i) => (tagged[`k${i + 2}`] = k));
        combined.push(tagged);
      }
      expect(splitPeriods(combined, periods, levels)).to.deep.equal(own);
    }));
  });

  it('bounds the rows one period returns by the widest levels', () => {
    expect(maxPeriodRows([byDay], [week])).to.equal(1 + 7);
    expect(maxPeriodRows([completion, byDay], [undefined, week])).to.equal(1 + 3 + 3 * 7);
    expect(maxPeriodRows([survey, completion], [undefined, undefined])).to.equal(1 + MAX_TERMS_BUCKETS + MAX_TERMS_BUCKETS * 3);
  });
});
