import { expect } from 'chai';
import fc from 'fast-check';
import { ParamBag } from '../../src/clickhouse/sql.ts';
import { timestampAtLeast, timestampAtMost, timestampBefore } from '../../src/events/analysis/timestamps.ts';
import { DT64 } from '../../src/query/selection.ts';
import { formatDbMicros } from '../../src/time/iso.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * The analyses' bounds on `timestamp` in the column's own type (src/events/analysis/timestamps.ts)
 * against the same comparisons with the microsecond bound, both evaluated by the engine on the
 * same millisecond timestamps: bounds just around them (a few µs to a few ms away, on both sides),
 * before 1970, and at the ends of what DateTime64 holds.
 */
const MS_1900 = Date.UTC(1900, 0, 1);
const MS_2300 = Date.UTC(2300, 0, 1);

describe('analysis timestamp bounds agree with the microsecond comparisons', function () {
  this.timeout(120_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc?.close());

  const genMs = fc.oneof(
    fc.integer({ min: MS_1900, max: MS_2300 - 1 }),
    fc.constantFrom(MS_1900, MS_1900 + 1, -1, 0, 1, MS_2300 - 2, MS_2300 - 1),
    fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2026, 0, 2) }),
  );

  it('admits exactly the same timestamps', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(genMs, { minLength: 1, maxLength: 20 }), fc.array(fc.tuple(fc.nat({ max: 19 }), fc.integer({ min: -2500, max: 2500 })), { minLength: 1, maxLength: 8 }), async (times, near) => {
        // Bounds within a few ms of the timestamps, clamped to what DateTime64(6) holds (the API's range).
        const bounds = near.map(([i, d]) => {
          const us = BigInt(times[i % times.length]) * 1000n + BigInt(d);
          const lo = BigInt(MS_1900) * 1000n;
          const hi = BigInt(MS_2300) * 1000n - 1n;
          return us < lo ? lo : us > hi ? hi : us;
        });
        const bag = new ParamBag();
        const ts = bag.add(times.map((t) => formatDbMicros(BigInt(t) * 1000n)), "Array(DateTime64(3, 'UTC'))");
        const cols = bounds.flatMap((us, i) => {
          const exact = bag.add(formatDbMicros(us), DT64);
          return [
            `(timestamp >= ${exact}) = (${timestampAtLeast(bag, us)}) AS ge${i}`,
            `(timestamp <= ${exact}) = (${timestampAtMost(bag, us)}) AS le${i}`,
            `(timestamp < ${exact}) = (${timestampBefore(bag, us)}) AS lt${i}`,
          ];
        });
        const rs = await svc.client.query({
          query: `SELECT toString(timestamp) AS t, ${cols.join(', ')} FROM (SELECT arrayJoin(${ts}) AS timestamp)`,
          query_params: bag.toParams(),
          format: 'JSONEachRow',
        });
        for (const row of await rs.json<Record<string, unknown>>()) {
          for (const [k, v] of Object.entries(row)) if (k !== 't') expect(Number(v), `${k} at ${row.t}, bounds ${bounds.map(formatDbMicros).join(' ')}`).to.equal(1);
        }
      }),
      { numRuns: 60, seed: Number(process.env.TIMESTAMPS_SEED ?? 2431), endOnFailure: true },
    );
  });
});
