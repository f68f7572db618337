import { expect } from 'chai';
import fc from 'fast-check';
import { planComparisons } from '../../src/metrics/compare.ts';
import { DomainError } from '../../src/errors.ts';
import { bucketIndex, planHistogram, type MinInterval } from '../../src/query/histogram.ts';

const us = (iso: string) => BigInt(Date.parse(iso)) * 1000n;
const iso = (t: bigint) => new Date(Number(t / 1000n)).toISOString();

describe('compare: comparison ranges and their aligned series', () => {
  it('previous_period: the same length right before; same interval and bucket count', () => {
    const main = { start: us('2024-03-01T00:00:00Z'), end: us('2024-03-31T00:00:00Z') - 1n };
    const plan = planHistogram(main.start, main.end, 'day', 100);
    const [c] = planComparisons('previous_period', main, [undefined, plan]);
    expect(iso(c.range.start)).to.equal('2024-01-31T00:00:00.000Z');
    expect(c.range.end).to.equal(main.start - 1n);
    expect(c.plans[0]).to.equal(undefined);
    expect(c.plans[1]!.starts.length).to.equal(plan.starts.length);
    expect(c.plans[1]!.interval).to.equal(plan.interval);
    expect(iso(c.plans[1]!.starts[1])).to.equal('2024-02-01T00:00:00.000Z');
  });

  it('previous_year: 12 calendar months earlier; a range with Feb 29 a year later is cut at its last bucket', () => {
    const main = { start: us('2025-02-27T00:00:00Z'), end: us('2025-03-01T23:59:59.999Z') };
    const plan = planHistogram(main.start, main.end, 'day', 100);
    expect(plan.starts.length).to.equal(3);
    const [c] = planComparisons('previous_year', main, [plan]);
    expect(iso(c.range.start)).to.equal('2024-02-27T00:00:00.000Z');
    // 2024-02-27 .. 2024-03-01 is 4 days: cut to the 3 buckets of the main series.
    expect(iso(c.range.end)).to.equal('2024-02-29T23:59:59.999Z');
    expect(c.plans[0]!.starts.map(iso)).to.deep.equal(['2024-02-27T00:00:00.000Z', '2024-02-28T00:00:00.000Z', '2024-02-29T00:00:00.000Z']);
  });

  it('explicit ranges: kept as given when they fit, a 400 naming compare[i] when they do not', () => {
    const main = { start: us('2024-03-01T00:00:00Z'), end: us('2024-03-07T23:59:59Z') };
    const plan = planHistogram(main.start, main.end, 'day', 7);
    const fits = { start: us('2024-01-01T00:00:00Z'), end: us('2024-01-05T00:00:00Z') };
    const tooLong = { start: us('2024-02-01T00:00:00Z'), end: us('2024-02-08T00:00:00Z') };
    const [a] = planComparisons([fits], main, [plan]);
    expect(a.range).to.deep.equal(fits);
    expect(a.plans[0]!.starts.length).to.equal(7);
    try {
      planComparisons([fits, tooLong], main, [plan]);
      expect.fail('a range of 8 days against 7 daily buckets must be refused');
    } catch (e) {
      expect(e).to.be.instanceOf(DomainError);
      expect((e as DomainError).issues?.[0].path).to.equal('compare[1]');
    }
    // Without a date level any range fits.
    expect(planComparisons([tooLong], main, [undefined])[0].range).to.deep.equal(tooLong);
  });

  it('previous_year before 1900 is a 400 naming compare', () => {
    const main = { start: us('1900-06-01T00:00:00Z'), end: us('1900-06-02T00:00:00Z') };
    expect(() => planComparisons('previous_year', main, [])).to.throw(DomainError);
  });

  it('property: every derived comparison has the main series shape and every instant of its range in a bucket', () => {
    const base = us('2023-01-01T00:00:00Z');
    fc.assert(fc.property(
      fc.bigInt({ min: 0n, max: 800n * 86_400_000_000n }),
      fc.bigInt({ min: 0n, max: 400n * 86_400_000_000n }),
      fc.constantFrom<MinInterval>('hour', 'day', 'month'),
      fc.integer({ min: 1, max: 100 }),
      fc.constantFrom('previous_period' as const, 'previous_year' as const),
      (offset, length, unit, buckets, spec) => {
        const main = { start: base + offset, end: base + offset + length };
        const plan = planHistogram(main.start, main.end, unit, buckets);
        const [c] = planComparisons(spec, main, [plan]);
        const p = c.plans[0]!;
        expect(p.starts.length).to.equal(plan.starts.length);
        expect(p.k).to.equal(plan.k);
        expect(p.start).to.equal(c.range.start);
        expect(c.range.end < p.boundary, "the range ends inside its series").to.equal(true);
        expect(c.range.end >= c.range.start).to.equal(true);
        expect(bucketIndex(p, c.range.end)).to.not.equal(null);
        if (spec === 'previous_period' && unit !== 'month') expect(c.range.end - c.range.start).to.equal(main.end - main.start);
      },
    ), { numRuns: 300 });
  });
});

describe('compare: month series keep whole months', () => {
  const months = (s: string, e: string, n: number) => {
    const main = { start: us(s), end: us(e) };
    return { main, plan: planHistogram(main.start, main.end, 'month', n) };
  };
  const range = (c: { range: { start: bigint; end: bigint } }) => [iso(c.range.start), iso(c.range.end)];

  it('previous_period of a whole month is the whole month before, however long each is', () => {
    for (const [s, e, ps, pe] of [
      ['2024-02-01T00:00:00Z', '2024-02-29T23:59:59Z', '2024-01-01T00:00:00.000Z', '2024-01-31T23:59:59.000Z'],
      ['2024-04-01T00:00:00Z', '2024-04-30T23:59:59.999Z', '2024-03-01T00:00:00.000Z', '2024-03-31T23:59:59.999Z'],
      ['2023-03-01T00:00:00Z', '2023-03-31T23:59:59Z', '2023-02-01T00:00:00.000Z', '2023-02-28T23:59:59.000Z'],
      // Month to date: the same days of the month before.
      ['2024-03-01T00:00:00Z', '2024-03-15T23:59:59Z', '2024-02-01T00:00:00.000Z', '2024-02-15T23:59:59.000Z'],
    ]) {
      const { main, plan } = months(s, e, 1);
      expect(range(planComparisons('previous_period', main, [plan])[0]), s).to.deep.equal([ps, pe]);
    }
    const { main, plan } = months('2024-05-01T00:00:00Z', '2024-06-30T23:59:59Z', 2);
    expect(range(planComparisons('previous_period', main, [plan])[0])).to.deep.equal(['2024-03-01T00:00:00.000Z', '2024-04-30T23:59:59.000Z']);
  });

  it('previous_year of a whole February holds Feb 29 of a leap year', () => {
    const { main, plan } = months('2025-02-01T00:00:00Z', '2025-02-28T23:59:59Z', 1);
    expect(range(planComparisons('previous_year', main, [plan])[0])).to.deep.equal(['2024-02-01T00:00:00.000Z', '2024-02-29T23:59:59.000Z']);
    // Day buckets and plain ranges stay date for date (the 28 buckets bound it anyway).
    const day = { start: us('2025-02-28T00:00:00Z'), end: us('2025-02-28T23:59:59Z') };
    expect(range(planComparisons('previous_year', day, [undefined])[0])).to.deep.equal(['2024-02-28T00:00:00.000Z', '2024-02-28T23:59:59.000Z']);
  });
});
