import { expect } from 'chai';
import fc from 'fast-check';
import { createHash, randomBytes } from 'node:crypto';
import { BITS_PER_KEY, ClaimFilter } from '../../src/claims/filter.ts';

const DAY = 24 * 60 * 60 * 1000;
const WEEK = 7 * DAY;
const NOW = Date.UTC(2026, 10, 25, 12);
const md5 = (s: string) => createHash('md5').update(s).digest();

describe('claim filter (blocked Bloom filter in daily generations)', () => {
  it('never reports a key it holds as absent, whatever the days and the order (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string(), fc.integer({ min: 0, max: WEEK - 1 })), { minLength: 1, maxLength: 300 }), (claims) => {
        const filter = new ClaimFilter(1 << 24, WEEK);
        for (const [id, age] of claims) filter.add(md5(id), NOW - age, 0, NOW);
        return claims.every(([id]) => filter.mayHold(md5(id)));
      }),
    );
  });

  it('testAndAdd answers what mayHold answered before it, then holds the key, as add does (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string({ maxLength: 3 }), fc.integer({ min: 0, max: WEEK - 1 })), { minLength: 1, maxLength: 300 }), fc.nat({ max: 3 }), (claims, cap) => {
        // Small caps saturate the filter: the answers must still agree.
        const [tested, added] = [0, 1].map(() => new ClaimFilter([0, 64, 4096, 1 << 24][cap], WEEK));
        for (const [id, age] of claims) {
          const before = added.mayHold(md5(id));
          added.add(md5(id), NOW - age, 0, NOW);
          if (tested.testAndAdd(md5(id), NOW - age, 0, NOW) !== before) return false;
          if (!tested.mayHold(md5(id))) return false;
        }
        return true;
      }),
    );
  });

  it(`holds ${BITS_PER_KEY} bits a key; false positives stay under 1e-5 at 1,000,000 keys in one day (measured over 1,000,000 other keys)`, () => {
    const filter = new ClaimFilter(1 << 30, WEEK);
    const keys = randomBytes(16 * 1_000_000);
    for (let i = 0; i < 1_000_000; i++) filter.add(keys, NOW, i * 16, NOW);
    for (let i = 0; i < 1_000_000; i += 997) expect(filter.mayHold(keys, i * 16)).to.equal(true);
    const others = randomBytes(16 * 1_000_000);
    let positives = 0;
    for (let i = 0; i < 1_000_000; i++) if (filter.mayHold(others, i * 16)) positives++;
    expect(positives).to.be.below(10);
    const { keys: held, bytes } = filter.stats();
    expect(held).to.equal(1_000_000);
    // Segments double as they fill: at most twice the design capacity is allocated.
    expect(bytes).to.be.at.most(2 * 1_000_000 * (BITS_PER_KEY / 8) + 64 * 1024);
  });

  it('drops a day once the whole day is older than the window, and keeps the days inside it', () => {
    const filter = new ClaimFilter(1 << 24, WEEK);
    const old = md5('old');
    const recent = md5('recent');
    const dayStart = Math.floor(NOW / DAY) * DAY;
    filter.add(old, dayStart - 7 * DAY, 0, dayStart - 7 * DAY);
    filter.add(recent, dayStart - DAY, 0, dayStart - DAY);
    expect([filter.mayHold(old), filter.mayHold(recent)]).to.deep.equal([true, true]);
    // Still inside: its last millisecond is within the window.
    filter.expire(dayStart - 6 * DAY + WEEK - 1);
    expect(filter.mayHold(old)).to.equal(true);
    filter.expire(dayStart - 6 * DAY + WEEK);
    expect([filter.mayHold(old), filter.mayHold(recent)]).to.deep.equal([false, true]);
    expect(filter.stats().generations).to.equal(1);
    // A claim already older than the window is not kept at all.
    filter.add(md5('ancient'), NOW - 2 * WEEK, 0, NOW);
    expect(filter.stats().keys).to.equal(1);
  });

  it('past its cap it allocates nothing more and still never reports a held key as absent: more keys go to the lookup', () => {
    const cap = 64 * 1024;
    const filter = new ClaimFilter(cap, WEEK);
    const keys = randomBytes(16 * 100_000);
    for (let i = 0; i < 100_000; i++) filter.add(keys, NOW - (i % 5) * DAY, i * 16, NOW);
    for (let i = 0; i < 100_000; i++) if (!filter.mayHold(keys, i * 16)) expect.fail(`key ${i} reported absent`);
    const stats = filter.stats();
    expect(stats.overCap).to.be.greaterThan(0);
    // Every generation has at least one block of its own even past the cap.
    expect(stats.bytes).to.be.at.most(cap + 5 * 64);
    let positives = 0;
    const others = randomBytes(16 * 10_000);
    for (let i = 0; i < 10_000; i++) if (filter.mayHold(others, i * 16)) positives++;
    expect(positives).to.be.greaterThan(100);
  });

  it('a cap of 0 keeps nothing: every key may be claimed', () => {
    const filter = new ClaimFilter(0, WEEK);
    filter.add(md5('a'), NOW, 0, NOW);
    expect([filter.mayHold(md5('a')), filter.mayHold(md5('b'))]).to.deep.equal([true, true]);
    expect(filter.stats().bytes).to.equal(0);
  });

  it('without a window keeps every key (one generation, never dropped)', () => {
    const filter = new ClaimFilter(1 << 20, undefined);
    filter.add(md5('a'), 0, 0, NOW);
    filter.add(md5('b'), NOW, 0, NOW);
    filter.expire(NOW + 100 * WEEK);
    expect([filter.mayHold(md5('a')), filter.mayHold(md5('b'))]).to.deep.equal([true, true]);
    expect(filter.stats().generations).to.equal(1);
  });
});
