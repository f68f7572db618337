import { expect } from 'chai';
import fc from 'fast-check';
import {
  ISO_8601_PATTERN,
  formatApi,
  formatApiMillis,
  formatDb,
  formatDbDate,
  formatDbMicros,
  formatDbMillis,
  formatMicros,
  fromBigMicros,
  fromMillis,
  parseInstantMicros,
  parseIso,
  parseIsoMicros,
  parseIsoMillis,
  toBigMicros,
  toMillis,
} from '../../src/time/iso.ts';

describe('time: the one ISO 8601 parser and its formatters', () => {
  it('refuses days their month does not have, in every caller form (no roll-over)', () => {
    for (const text of ['2023-02-29', '2023-02-29T00:00:00Z', '2024-02-30T00:00:00Z', '1900-02-29', '2024-04-31 10:00:00', '2024-13-01']) {
      expect(parseIso(text), text).to.equal(undefined);
      expect(parseIsoMillis(text), text).to.equal(undefined);
      expect(parseIsoMicros(text), text).to.equal(undefined);
      expect(parseIso(text, { requireOffset: true }), text).to.equal(undefined);
    }
    expect(formatApi(parseIso('2024-02-29T12:00:00Z')!)).to.equal('2024-02-29T12:00:00.000000Z');
    expect(formatApi(parseIso('2000-02-29')!)).to.equal('2000-02-29T00:00:00.000000Z');
  });

  it('requireOffset: a time and a zone', () => {
    expect(parseIso('2024-05-01', { requireOffset: true })).to.equal(undefined);
    expect(parseIso('2024-05-01T10:00:00', { requireOffset: true })).to.equal(undefined);
    expect(formatApiMillis(parseIso('2024-05-01T10:00:00+02', { requireOffset: true })!)).to.equal('2024-05-01T08:00:00.000Z');
  });

  it('accepts a date-time exactly when its fields name a real calendar instant (property, against a Date-based oracle)', () => {
    const num = (min: number, max: number) => fc.integer({ min, max }).map((n) => String(n).padStart(2, '0'));
    const candidate = fc.record({
      y: fc.integer({ min: 0, max: 9999 }).map((n) => String(n).padStart(4, '0')),
      m: num(0, 13),
      d: num(0, 32),
      time: fc.option(fc.record({ h: num(0, 25), mi: num(0, 61), s: fc.option(num(0, 61)), zone: fc.constantFrom('', 'Z', '+05:30', '-24:00', '+0960', '-23') })),
    });
    const daysIn = (y: number, m: number) => {
      const d = new Date(0);
      d.setUTCFullYear(y, m, 0);
      return d.getUTCDate();
    };
    fc.assert(
      fc.property(candidate, ({ y, m, d, time }) => {
        const text = `${y}-${m}-${d}${time ? `T${time.h}:${time.mi}${time.s === null ? '' : `:${time.s}`}${time.zone}` : ''}`;
        const dateOk = +m >= 1 && +m <= 12 && +d >= 1 && +d <= daysIn(+y, +m);
        const zoneOk = !time || !['-24:00', '+0960'].includes(time.zone);
        const timeOk = !time || (+time.h <= 23 && +time.mi <= 59 && (time.s === null || +time.s <= 59) && zoneOk);
        expect(parseIso(text) !== undefined, text).to.equal(dateOk && timeOk);
        expect(ISO_8601_PATTERN.test(text), text).to.equal(dateOk && timeOk);
      }),
    );
  });

  it('agrees with Date on every real instant, to the millisecond (property)', () => {
    fc.assert(
      fc.property(fc.date({ min: new Date('0000-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }), (date) => {
        const t = parseIso(date.toISOString())!;
        expect(toMillis(t)).to.equal(date.getTime());
        expect(formatApiMillis(t)).to.equal(date.toISOString());
        expect(formatDbMillis(t)).to.equal(formatDbDate(date));
        expect(toMillis(fromMillis(date.getTime()))).to.equal(date.getTime());
      }),
    );
  });

  it('keeps microseconds exact through µs, API and engine forms (property)', () => {
    const storable = fc.bigInt({ min: -2_208_988_800_000_000n, max: 10_413_791_999_999_999n });
    fc.assert(
      fc.property(storable, (us) => {
        expect(toBigMicros(fromBigMicros(us))).to.equal(us);
        expect(parseInstantMicros(formatMicros(us))).to.equal(us);
        expect(parseInstantMicros(formatDbMicros(us))).to.equal(us);
        expect(formatDb(parseIsoMicros(formatMicros(us))!)).to.equal(formatDbMicros(us));
      }),
    );
  });

  it('responses keep DateTime64 years only; events take any year', () => {
    expect(parseIsoMicros('1899-12-31T23:59:59Z')).to.equal(undefined);
    expect(parseIsoMicros('2300-01-01')).to.equal(undefined);
    expect(parseIsoMillis('0099-01-01')).to.equal(new Date('0099-01-01T00:00:00Z').getTime());
  });
});
