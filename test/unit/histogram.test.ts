import { expect } from 'chai';
import fc from 'fast-check';
import {
  addMonths,
  bucketIndex,
  formatMicros,
  parseInstantMicros,
  planHistogram,
  truncateTo,
  type MinInterval,
} from '../../src/query/histogram.ts';

const t = (iso: string): bigint => {
  const v = parseInstantMicros(iso);
  if (v === null) throw new Error(`bad test date ${iso}`);
  return v;
};
const keys = (plan: { starts: readonly bigint[] }) => plan.starts.map(formatMicros);

describe('histogram: planHistogram', () => {
  const cases: Array<{ name: string; start: string; end: string; unit: MinInterval; n: number; interval: string; keys: string[] }> = [
    {
      name: 'range shorter than one min interval -> one bucket at the range start',
      start: '2024-01-01T10:30:00Z', end: '2024-01-01T15:00:00Z', unit: 'day', n: 10, interval: '1 day',
      keys: ['2024-01-01T10:30:00.000000Z'],
    },
    {
      name: 'start = end -> one bucket',
      start: '2024-01-01T00:00:00Z', end: '2024-01-01T00:00:00Z', unit: 'hour', n: 100, interval: '1 hour',
      keys: ['2024-01-01T00:00:00.000000Z'],
    },
    {
      name: 'a range that needs exactly N buckets keeps k = 1',
      start: '2024-01-01T00:00:00Z', end: '2024-01-05T23:59:59.999999Z', unit: 'day', n: 5, interval: '1 day',
      keys: ['2024-01-01T00:00:00.000000Z', '2024-01-02T00:00:00.000000Z', '2024-01-03T00:00:00.000000Z', '2024-01-04T00:00:00.000000Z', '2024-01-05T00:00:00.000000Z'],
    },
    {
      name: 'inclusive end on a bucket edge needs one bucket more (6 > 5) -> k = 2',
      start: '2024-01-01T00:00:00Z', end: '2024-01-06T00:00:00Z', unit: 'day', n: 5, interval: '2 day',
      keys: ['2024-01-01T00:00:00.000000Z', '2024-01-03T00:00:00.000000Z', '2024-01-05T00:00:00.000000Z'],
    },
    {
      name: 'N = 1 -> one bucket covering the whole range',
      start: '2024-01-01T00:00:00Z', end: '2024-03-10T00:00:00Z', unit: 'day', n: 1, interval: '70 day',
      keys: ['2024-01-01T00:00:00.000000Z'],
    },
    {
      name: '3-day steps aligned to the range start (not to midnight)',
      start: '2024-01-01T13:45:00.250000Z', end: '2024-01-10T00:00:00Z', unit: 'day', n: 4, interval: '3 day',
      keys: ['2024-01-01T13:45:00.250000Z', '2024-01-04T13:45:00.250000Z', '2024-01-07T13:45:00.250000Z'],
    },
    {
      name: 'hours across a day boundary',
      start: '2024-01-01T22:00:00Z', end: '2024-01-02T01:59:59Z', unit: 'hour', n: 24, interval: '1 hour',
      keys: ['2024-01-01T22:00:00.000000Z', '2024-01-01T23:00:00.000000Z', '2024-01-02T00:00:00.000000Z', '2024-01-02T01:00:00.000000Z'],
    },
    {
      name: 'calendar months of different lengths',
      start: '2024-01-01T00:00:00Z', end: '2024-04-30T00:00:00Z', unit: 'month', n: 12, interval: '1 month',
      keys: ['2024-01-01T00:00:00.000000Z', '2024-02-01T00:00:00.000000Z', '2024-03-01T00:00:00.000000Z', '2024-04-01T00:00:00.000000Z'],
    },
    {
      name: 'month steps from the 31st clamp to the month end (leap February)',
      start: '2024-01-31T12:00:00Z', end: '2024-05-01T00:00:00Z', unit: 'month', n: 12, interval: '1 month',
      keys: ['2024-01-31T12:00:00.000000Z', '2024-02-29T12:00:00.000000Z', '2024-03-31T12:00:00.000000Z', '2024-04-30T12:00:00.000000Z'],
    },
    {
      name: '2-month steps over a year end',
      start: '2023-11-15T00:00:00Z', end: '2024-06-01T00:00:00Z', unit: 'month', n: 4, interval: '2 month',
      keys: ['2023-11-15T00:00:00.000000Z', '2024-01-15T00:00:00.000000Z', '2024-03-15T00:00:00.000000Z', '2024-05-15T00:00:00.000000Z'],
    },
    {
      name: 'leap day start: the minimal k (9, not 12) covers 2 years in 3 buckets',
      start: '2024-02-29T00:00:00Z', end: '2026-03-01T00:00:00Z', unit: 'month', n: 3, interval: '9 month',
      keys: ['2024-02-29T00:00:00.000000Z', '2024-11-29T00:00:00.000000Z', '2025-08-29T00:00:00.000000Z'],
    },
    {
      name: 'leap day inside a day series',
      start: '2024-02-27T00:00:00Z', end: '2024-03-01T23:00:00Z', unit: 'day', n: 10, interval: '1 day',
      keys: ['2024-02-27T00:00:00.000000Z', '2024-02-28T00:00:00.000000Z', '2024-02-29T00:00:00.000000Z', '2024-03-01T00:00:00.000000Z'],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const plan = planHistogram(t(c.start), t(c.end), c.unit, c.n);
      expect(plan.interval).to.equal(c.interval);
      expect(keys(plan)).to.deep.equal(c.keys);
      expect(plan.starts.length).to.be.at.most(c.n);
    });
  }

  it('leap day start, monthly: February of the next year clamps to the 28th', () => {
    const plan = planHistogram(t('2024-02-29T00:00:00Z'), t('2025-03-15T00:00:00Z'), 'month', 100);
    expect(plan.interval).to.equal('1 month');
    expect(keys(plan).slice(-3)).to.deep.equal(['2024-12-29T00:00:00.000000Z', '2025-01-29T00:00:00.000000Z', '2025-02-28T00:00:00.000000Z']);
    expect(bucketIndex(plan, t('2025-03-15T00:00:00Z'))).to.equal(12);
  });

  it('end < start gives an empty series', () => {
    const plan = planHistogram(t('2024-01-02T00:00:00Z'), t('2024-01-01T00:00:00Z'), 'day', 10);
    expect(plan.starts).to.deep.equal([]);
    expect(bucketIndex(plan, t('2024-01-01T12:00:00Z'))).to.equal(null);
  });

  it('a response at exactly `end` lands in the last bucket; just outside lands nowhere', () => {
    const plan = planHistogram(t('2024-01-01T00:00:00Z'), t('2024-01-06T00:00:00Z'), 'day', 5);
    expect(bucketIndex(plan, plan.end)).to.equal(plan.starts.length - 1);
    expect(bucketIndex(plan, plan.start)).to.equal(0);
    expect(bucketIndex(plan, plan.start - 1n)).to.equal(null);
    expect(bucketIndex(plan, plan.boundary)).to.equal(null);
  });

  it('month bucket index follows the clamped starts', () => {
    const plan = planHistogram(t('2024-01-31T00:00:00Z'), t('2024-04-30T00:00:00Z'), 'month', 12);
    expect(bucketIndex(plan, t('2024-02-29T23:00:00Z'))).to.equal(1);
    expect(bucketIndex(plan, t('2024-03-01T00:00:00Z'))).to.equal(1);
    expect(bucketIndex(plan, t('2024-03-30T23:59:59.999999Z'))).to.equal(1);
    expect(bucketIndex(plan, t('2024-03-31T00:00:00Z'))).to.equal(2);
  });

  const unitArb = fc.constantFrom<MinInterval>('hour', 'day', 'month');
  const instant = fc.bigInt({ min: t('2000-01-01T00:00:00Z'), max: t('2040-01-01T00:00:00Z') });
  const spanFor = (unit: MinInterval) => (unit === 'hour' ? 400n * 3_600_000_000n : unit === 'day' ? 800n * 86_400_000_000n : 40_000n * 86_400_000_000n);

  it('property: ≤ N contiguous buckets, the smallest k, every instant of [start, end] in exactly one bucket', () => {
    fc.assert(
      fc.property(unitArb, instant, fc.bigInt({ min: 0n, max: 1n << 62n }), fc.integer({ min: 1, max: 100 }), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 20 }), (unit, start, raw, n, probes) => {
        const end = start + (raw % spanFor(unit));
        const plan = planHistogram(start, end, unit, n);
        expect(plan.starts.length).to.be.within(1, n);
        expect(plan.starts[0]).to.equal(start);
        // contiguous and strictly increasing; the boundary is after end
        for (let i = 1; i < plan.starts.length; i++) expect(plan.starts[i] > plan.starts[i - 1]).to.equal(true);
        expect(plan.boundary > end).to.equal(true);
        expect(plan.starts[plan.starts.length - 1] <= end).to.equal(true);
        // minimality: k - 1 would need more than N buckets
        if (plan.k > 1) {
          const smaller = stepsNeeded(start, end, unit, plan.k - 1);
          expect(smaller).to.be.greaterThan(n);
        }
        for (const p of [0, 1, ...probes]) {
          const x = start + BigInt(Math.floor(Number(end - start) * p));
          const at = x > end ? end : x;
          const i = bucketIndex(plan, at);
          expect(i).to.not.equal(null);
          expect(plan.starts[i!] <= at).to.equal(true);
          expect(at < (plan.starts[i! + 1] ?? plan.boundary)).to.equal(true);
        }
      }),
      { numRuns: 500 },
    );
  });
});

/** Brute force: how many buckets of k units the range needs (walks the edges one by one). */
function stepsNeeded(start: bigint, end: bigint, unit: MinInterval, k: number): number {
  let count = 0;
  for (let edge = start; edge <= end; count++) {
    edge = unit === 'month' ? addMonths(start, (count + 1) * k) : start + BigInt((count + 1) * k) * (unit === 'hour' ? 3_600_000_000n : 86_400_000_000n);
    if (count > 200) return count;
  }
  return count;
}

describe('histogram: ISO <-> µs', () => {
  it('parses offsets, fractions and the engine format, and formats with microseconds', () => {
    expect(formatMicros(t('2024-01-02T03:04:05.123456Z'))).to.equal('2024-01-02T03:04:05.123456Z');
    expect(formatMicros(t('2024-01-02T05:04:05.1+02:00'))).to.equal('2024-01-02T03:04:05.100000Z');
    expect(formatMicros(t('2024-01-02 03:04:05.000007'))).to.equal('2024-01-02T03:04:05.000007Z');
    expect(formatMicros(t('2024-01-02'))).to.equal('2024-01-02T00:00:00.000000Z');
    expect(formatMicros(t('1969-12-31T23:59:59.999999Z'))).to.equal('1969-12-31T23:59:59.999999Z');
    for (const bad of ['2024-02-30T00:00:00Z', 'yesterday', '2024-01-01T25:00:00Z', '']) expect(parseInstantMicros(bad)).to.equal(null);
  });

  it('truncates to calendar units', () => {
    const x = t('2024-02-29T13:14:15.5Z');
    expect(formatMicros(truncateTo(x, 'hour'))).to.equal('2024-02-29T13:00:00.000000Z');
    expect(formatMicros(truncateTo(x, 'day'))).to.equal('2024-02-29T00:00:00.000000Z');
    expect(formatMicros(truncateTo(x, 'month'))).to.equal('2024-02-01T00:00:00.000000Z');
  });
});
