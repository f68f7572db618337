import { expect } from 'chai';
import { leafBucketRows } from '../../src/events/read/hours-buckets.ts';

/**
 * hours-buckets.ts: the hours' groups (one row per group and part) summed into compileRankedBuckets'
 * rows, or undefined when the ranking would cut. The engine's answers are compared with the rows
 * path in test/integration/event-hours.test.ts; here the cases a small data set may not reach.
 */
describe('events: the hours\' groups as ranked-bucket rows (hours-buckets.ts)', () => {
  const sorted = (rows: unknown[] | undefined) => rows?.map((r) => JSON.stringify(r)).sort();

  it('sums a group across parts and rolls up the parents; a NULL key counts in its parents only', () => {
    const rows = leafBucketRows(
      [
        { g1: 'signup', g2: 0, n: 2 },
        { g1: 'signup', g2: 0, n: 3 }, // the same group from the partial hours
        { g1: 'signup', g2: 1, n: 1 },
        { g1: 'login', g2: null, n: 4 }, // outside the series: in login and the total only
        { g1: null, g2: 1, n: 5 }, // no name: in the total only
      ],
      [null, null],
      100,
      1000,
    );
    expect(sorted(rows)).to.deep.equal(sorted([
      { depth: 0, k1: null, k2: null, doc_count: 15, other_doc_count: 0 },
      { depth: 1, k1: 'signup', k2: null, doc_count: 6, other_doc_count: 0 },
      { depth: 1, k1: 'login', k2: null, doc_count: 4, other_doc_count: 0 },
      { depth: 2, k1: 'signup', k2: 0, doc_count: 5, other_doc_count: 0 },
      { depth: 2, k1: 'signup', k2: 1, doc_count: 1, other_doc_count: 0 },
    ]));
  });

  it('a String level rolls up to \'\' (the ROLLUP default of `type`), keys with commas stay apart', () => {
    const rows = leafBucketRows([{ g1: 3, g2: 'a,b', n: 1 }, { g1: 3, g2: 'a', n: 1 }], [null, ''], 100, 1000);
    expect(sorted(rows)).to.deep.equal(sorted([
      { depth: 0, k1: null, k2: '', doc_count: 2, other_doc_count: 0 },
      { depth: 1, k1: 3, k2: '', doc_count: 2, other_doc_count: 0 },
      { depth: 2, k1: 3, k2: 'a,b', doc_count: 1, other_doc_count: 0 },
      { depth: 2, k1: 3, k2: 'a', doc_count: 1, other_doc_count: 0 },
    ]));
  });

  it('nothing counted: no row (compileRankedBuckets keeps no bucket of 0)', () => {
    expect(leafBucketRows([], [null], 100, 1000)).to.deep.equal([]);
    expect(leafBucketRows([{ g1: 'x', n: 0 }], [null], 100, 1000)).to.deep.equal([]);
  });

  it('undefined when a parent has more buckets than the ranking keeps, or the parts hit their limit', () => {
    const names = (k: number) => Array.from({ length: k }, (_, i) => ({ g1: `e${i}`, g2: 0, n: 1 }));
    expect(leafBucketRows(names(3), [null, null], 3, 1000)).to.have.length(1 + 3 + 3);
    expect(leafBucketRows(names(4), [null, null], 3, 1000)).to.equal(undefined);
    // Under one parent: 4 days of one name.
    expect(leafBucketRows([0, 1, 2, 3].map((d) => ({ g1: 'x', g2: d, n: 1 })), [null, null], 3, 1000)).to.equal(undefined);
    expect(leafBucketRows(names(3), [null, null], 100, 3)).to.equal(undefined);
  });

  it('resampled rows: a bucket array counts as one group per bucket with events, a name\'s \'\' as NULL', () => {
    const rows = [
      { g1: 'signup', g2: 3, n: 2, c: [] }, // whole hours: already a group
      { g1: 'signup', g2: 0, n: 0, c: [0, 4, 0, 1] }, // partial hours: events per bucket
      { g1: '', g2: 0, n: 0, c: [1, 0, 0, 0] }, // no name: in the total only
    ];
    expect(sorted(leafBucketRows(rows, [null, null], 100, 1000, { level: 1, names: [0] }))).to.deep.equal(sorted([
      { depth: 0, k1: null, k2: null, doc_count: 8, other_doc_count: 0 },
      { depth: 1, k1: 'signup', k2: null, doc_count: 7, other_doc_count: 0 },
      { depth: 2, k1: 'signup', k2: 1, doc_count: 4, other_doc_count: 0 },
      { depth: 2, k1: 'signup', k2: 3, doc_count: 3, other_doc_count: 0 },
    ]));
    // Four buckets under one parent where three are kept: the ranking would cut.
    expect(leafBucketRows([{ g1: 'x', g2: 0, n: 0, c: [1, 1, 1, 1] }], [null, null], 3, 1000, { level: 1, names: [0] })).to.equal(undefined);
  });
});
