import { expect } from 'chai';
import fc from 'fast-check';
import { bucketIndex, MICROS_PER_HOUR, planHistogram, type MinInterval } from '../../src/query/histogram.ts';
import { planEdges, splitHours } from '../../src/events/read/hours.ts';
import { MAX_MASK_WEEKS, weekMasks, weeksServe } from '../../src/events/read/user-weeks.ts';
import type { EventSelection } from '../../src/events/read/source.ts';
import type { CohortNode } from '../../src/events/analysis/cohort.ts';

/**
 * The buckets' whole hours, week by week (src/events/read/user-weeks.ts), against the hours
 * enumerated one by one: every whole hour of the range is in exactly one mask, its bucket's, at
 * its bit of its week; no other bit is set.
 */
describe('user weeks: the masks of the buckets whole hours', () => {
  const T0 = 1_780_000_000_000_000n; // 2026-05-28, µs
  const instant = fc.bigInt({ min: T0 - 40n * 24n * MICROS_PER_HOUR, max: T0 + 40n * 24n * MICROS_PER_HOUR });
  const onHour = instant.map((t) => t - (t % MICROS_PER_HOUR));
  const anyInstant = fc.oneof(instant, onHour, onHour.map((t) => t - 1n));

  it('hold every whole hour of the range once, in its bucket (property)', () => {
    fc.assert(
      fc.property(anyInstant, anyInstant, fc.constantFrom<MinInterval>('hour', 'day', 'month'), fc.integer({ min: 1, max: 100 }), (a, b, unit, buckets) => {
        const [start, end] = a <= b ? [a, b] : [b, a];
        const plan = planHistogram(start, end, unit, buckets);
        const split = splitHours(start, end, planEdges([plan]));
        const masks = weekMasks(plan, split)!;
        const got = new Set<string>();
        masks.weeks.forEach((w, i) => masks.buckets[i].forEach((bucket, j) => {
          for (let bit = 0n; bit < 168n; bit++) if ((masks.masks[i][j] >> bit) & 1n) got.add(`${(BigInt(w) * 168n + bit) * MICROS_PER_HOUR}:${bucket}`);
          expect(masks.masks[i][j] >> 168n, 'no bit past the week').to.equal(0n);
        }));
        const partial = new Set(split.partial);
        const expected = new Set<string>();
        for (let h = split.from!; h + MICROS_PER_HOUR <= split.to!; h += MICROS_PER_HOUR) {
          if (!partial.has(h)) expected.add(`${h}:${bucketIndex(plan, h)}`);
        }
        expect([...got].sort()).to.deep.equal([...expected].sort());
      }),
      { numRuns: 300 },
    );
  });

  it('serve only what the weeks know: one date level, no filter, no cohort', () => {
    const plan = planHistogram(T0, T0 + 10n * 24n * MICROS_PER_HOUR, 'day', 10);
    const scope: EventSelection = { orgId: '00000000-0000-0000-0000-000000000001', filtersBool: 'AND', filters: [] };
    expect(weeksServe(scope, 1, plan)).to.equal(true);
    expect(weeksServe(scope, 2, plan)).to.equal(false);
    expect(weeksServe({ ...scope, filters: [{ kind: 'type', op: 'eq', values: ['track'] } as never] }, 1, plan)).to.equal(false);
    const cohort = { kind: 'copilot', rating: ['positive'] } as unknown as CohortNode;
    expect(weeksServe({ ...scope, cohort }, 1, plan)).to.equal(false);
  });

  it('gives up past MAX_MASK_WEEKS weeks (the rows answer)', () => {
    const start = T0;
    const end = T0 + BigInt(MAX_MASK_WEEKS + 2) * 168n * MICROS_PER_HOUR;
    const plan = planHistogram(start, end, 'month', 100);
    expect(weekMasks(plan, splitHours(start, end, planEdges([plan])))).to.equal(undefined);
  });
});
