import { expect } from 'chai';
import fc from 'fast-check';
import {
  Z95, countDifference, meanDifference, meanInterval, momentsOf, npsDifference, npsInterval, proportionDifference, round, roundedRatio, t95, wilsonInterval,
} from '../../src/metrics/statistics.ts';

const close = (actual: number, expected: number, tol = 5e-5) => expect(Math.abs(actual - expected), `${actual} vs ${expected}`).to.be.below(tol);

/**
 * Expected figures are published ones (Newcombe 1998) or were computed apart from this code
 * (Python with scipy.stats.t for the t quantiles), never by the functions under test.
 */
describe('statistics: intervals and two-sample tests', () => {
  it('Wilson score interval: Newcombe (1998) example 81/263 -> 0.2553..0.3662', () => {
    const [lo, hi] = wilsonInterval(81, 263)!;
    close(lo, 0.2552885);
    close(hi, 0.3662096);
    expect(wilsonInterval(0, 0)).to.equal(null);
    // Never a degenerate interval at 0 or n successes, and within 0..1.
    const [lo0, hi0] = wilsonInterval(0, 10)!;
    expect(lo0).to.equal(0);
    expect(hi0).to.be.greaterThan(0.2).and.below(0.35);
    expect(wilsonInterval(10, 10)![1]).to.equal(1);
  });

  it('Newcombe hybrid score difference: his example 56/70 - 48/80 -> 0.0524..0.3339, significant', () => {
    const d = proportionDifference({ successes: 56, n: 70 }, { successes: 48, n: 80 })!;
    close(d.delta, 0.2);
    close(d.ci95[0], 0.0524315);
    close(d.ci95[1], 0.3338727);
    expect(d.significant).to.equal(true);
    expect(proportionDifference({ successes: 5, n: 10 }, { successes: 4, n: 10 })!.significant).to.equal(false);
    expect(proportionDifference({ successes: 1, n: 1 }, { successes: 0, n: 1 })!.significant, 'one response each proves nothing').to.equal(false);
    expect(proportionDifference({ successes: 1, n: 0 }, { successes: 0, n: 1 })).to.equal(null);
  });

  it('NPS adjusted Wald (Rocks 2016): 50 promotors, 20 detractors of 100 -> 14.05..44.20', () => {
    const [lo, hi] = npsInterval({ promotors: 50, detractors: 20, total: 100 })!;
    close(lo, 14.0511302, 1e-4);
    close(hi, 44.2012970, 1e-4);
    expect(npsInterval({ promotors: 0, detractors: 0, total: 0 })).to.equal(null);
    // All promotors: not the degenerate [100, 100] of the plain Wald interval.
    const [alo, ahi] = npsInterval({ promotors: 5, detractors: 0, total: 5 })!;
    expect(ahi).to.equal(100);
    expect(alo).to.be.below(90);
  });

  it('NPS difference: significant for a large change on many answers, not on a few', () => {
    const big = npsDifference({ promotors: 600, detractors: 100, total: 1000 }, { promotors: 400, detractors: 300, total: 1000 })!;
    close(big.delta, 40);
    expect(big.significant).to.equal(true);
    const few = npsDifference({ promotors: 3, detractors: 1, total: 5 }, { promotors: 2, detractors: 2, total: 5 })!;
    expect(few.significant).to.equal(false);
    expect(npsDifference({ promotors: 1, detractors: 0, total: 1 }, { promotors: 0, detractors: 0, total: 0 })).to.equal(null);
  });

  it("Student's t quantile and the mean's interval", () => {
    close(t95(1), 12.7062047);
    close(t95(10), 2.2281389);
    close(t95(1e7), Z95, 1e-5);
    // 1, 2, 3, 4, 5: mean 3, s² 2.5, t(0.975, 4) = 2.7764451 (scipy).
    const m = momentsOf([[1, 1], [2, 1], [3, 1], [4, 1], [5, 1]]);
    expect(m).to.deep.equal({ n: 5, sum: 15, sumSquares: 55 });
    const [lo, hi] = meanInterval(m, 1, 5)!;
    const half = 2.7764451 * Math.sqrt(2.5 / 5);
    close(lo, 3 - half);
    close(hi, 3 + half);
    expect(meanInterval(momentsOf([[4, 1]]), 1, 5), 'one score has no variance').to.equal(null);
    expect(meanInterval(momentsOf([[5, 3]]), 1, 5)).to.deep.equal([5, 5]);
    // Clamped to the scale.
    expect(meanInterval(momentsOf([[1, 1], [5, 1]]), 1, 5)).to.deep.equal([1, 5]);
  });

  it("Welch's test: 2,4,6,8,10 against 1,2,3,4,5 -> df 5.882, t(0.975) 2.4588 (scipy), not significant", () => {
    const a = momentsOf([2, 4, 6, 8, 10].map((x) => [x, 1] as const));
    const b = momentsOf([1, 2, 3, 4, 5].map((x) => [x, 1] as const));
    const d = meanDifference(a, b)!;
    const half = 2.4588237 * Math.sqrt(10 / 5 + 2.5 / 5);
    close(d.delta, 3);
    close(d.ci95[0], 3 - half, 1e-4);
    close(d.ci95[1], 3 + half, 1e-4);
    expect(d.significant).to.equal(false);
    expect(meanDifference(momentsOf([[5, 10]]), momentsOf([[4, 10]]))).to.deep.equal({ delta: 1, ci95: [1, 1], significant: true });
    expect(meanDifference(momentsOf([[5, 1]]), momentsOf([[4, 10]]))).to.equal(null);
  });

  it('Poisson counts over windows of one length', () => {
    const d = countDifference(150, 100);
    expect(d.delta).to.equal(50);
    close(d.ci95[0], 50 - Z95 * Math.sqrt(250));
    expect(d.significant).to.equal(true);
    expect(countDifference(12, 10).significant).to.equal(false);
    expect(countDifference(0, 0)).to.deep.equal({ delta: 0, ci95: [0, 0], significant: false });
  });

  it('roundedRatio: num / den to the decimals, half away from zero, exactly (no float drift)', () => {
    expect(roundedRatio(57, 800, 4)).to.equal(0.0713); // round(57 / 800, 4) is 0.0712
    expect(roundedRatio(-1, 8, 2)).to.equal(-0.13);
    expect(Object.is(roundedRatio(0, 3, 4), 0)).to.equal(true);
    fc.assert(fc.property(fc.integer({ min: 1, max: 1_000_000 }), fc.nat(1_000_000), (den, k) => {
      const num = k % (den + 1);
      // The decimal expansion of num / den to 5 places, rounded half up by hand.
      const scaled5 = (BigInt(num) * 100_000n) / BigInt(den);
      const q = scaled5 / 10n + (scaled5 % 10n >= 5n ? 1n : 0n);
      expect(roundedRatio(num, den, 4)).to.equal(Number(q) / 10_000);
    }), { numRuns: 2000 });
  });

  it('round: half away from zero, never -0', () => {
    expect(round(2.345, 2)).to.equal(2.35);
    expect(round(-2.345, 2)).to.equal(-2.35);
    expect(Object.is(round(-0.0001, 2), 0)).to.equal(true);
  });

  it('properties: intervals hold their estimate, stay on their scale; a difference is antisymmetric', () => {
    const counts = fc.tuple(fc.nat({ max: 500 }), fc.nat({ max: 500 }), fc.nat({ max: 500 }));
    fc.assert(fc.property(counts, counts, ([p, d, n0], [p2, d2, n2]) => {
      const a = { promotors: p, detractors: d, total: p + d + n0 };
      const b = { promotors: p2, detractors: d2, total: p2 + d2 + n2 };
      const ci = npsInterval(a);
      if (a.total === 0) return ci === null;
      const score = (100 * (p - d)) / a.total;
      expect(ci![0]).to.be.at.least(-100).and.at.most(ci![1]);
      expect(ci![1]).to.be.at.most(100);
      // The adjusted interval is centered near the score; it holds it unless n is tiny and extreme.
      if (a.total >= 30) expect(score).to.be.within(ci![0], ci![1]);
      const ab = npsDifference(a, b);
      const ba = npsDifference(b, a);
      if (ab && ba) {
        close(ab.delta, -ba.delta, 1e-9);
        close(ab.ci95[0], -ba.ci95[1], 1e-9);
        expect(ab.significant).to.equal(ba.significant);
      }
      return true;
    }));
    fc.assert(fc.property(fc.nat({ max: 1000 }), fc.nat({ max: 1000 }), (x, extra) => {
      const n = x + extra;
      const ci = wilsonInterval(x, n);
      if (n === 0) return ci === null;
      return ci![0] >= 0 && ci![1] <= 1 && ci![0] <= x / n + 1e-12 && x / n <= ci![1] + 1e-12;
    }));
    const scores = fc.array(fc.tuple(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 50 })), { minLength: 1, maxLength: 5 });
    fc.assert(fc.property(scores, scores, (xs, ys) => {
      const a = momentsOf(xs);
      const ci = meanInterval(a, 1, 5);
      if (a.n >= 2) expect(a.sum / a.n).to.be.within(ci![0] - 1e-9, ci![1] + 1e-9);
      const b = momentsOf(ys);
      const ab = meanDifference(a, b);
      const ba = meanDifference(b, a);
      if (ab && ba) {
        close(ab.delta, -ba.delta, 1e-9);
        expect(ab.significant).to.equal(ba.significant);
      }
      return true;
    }));
  });
});
