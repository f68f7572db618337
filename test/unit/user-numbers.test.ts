import { expect } from 'chai';
import fc from 'fast-check';
import { OrgNumbers } from '../../src/events/user-numbers.ts';

/**
 * The rule of src/events/user-numbers.ts: applied claim by claim in log order (what a process's
 * map does) it gives what the one-query form gives (what a lookup past the cap does): a user's
 * number is the `num` of its earliest claim that is the first claim of its number. And it is a
 * numbering: one number per user, one user per number, decided claims never change.
 */
describe('user numbers: the claim rule', () => {
  const log = fc.array(fc.tuple(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 1, max: 15 })), { maxLength: 60 });

  it('applied in order = the one-query form, and a numbering (property)', () => {
    fc.assert(
      fc.property(log, fc.integer({ min: 0, max: 60 }), (claims, cut) => {
        const org = new OrgNumbers();
        const decided: Map<string, number>[] = [];
        claims.forEach(([u, n], i) => {
          org.apply(`u${u}`, n);
          if (i === cut) decided.push(new Map(org.users));
        });
        // The one-query form.
        const firstOfNum = new Map<number, number>();
        claims.forEach(([, n], i) => firstOfNum.has(n) || firstOfNum.set(n, i));
        const want = new Map<string, number>();
        claims.forEach(([u, n], i) => {
          if (firstOfNum.get(n) === i && !want.has(`u${u}`)) want.set(`u${u}`, n);
        });
        expect(new Map([...org.users].sort())).to.deep.equal(new Map([...want].sort()));
        expect(new Set(org.users.values()).size).to.equal(org.users.size);
        for (const earlier of decided) for (const [u, n] of earlier) expect(org.users.get(u)).to.equal(n);
        // Proposals are never a number seen.
        const seen = new Set(claims.map(([, n]) => n));
        for (let i = 0; i < 5; i++) expect(seen.has(org.propose())).to.equal(false);
      }),
    );
  });
});
