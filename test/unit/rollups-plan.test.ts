import { expect } from 'chai';
import { UsageError, parseArgs } from '../../src/cli/args.ts';
import { planHistogram, parseInstantMicros } from '../../src/query/histogram.ts';
import { ROLLUPS_REBUILD, rollupsOrg } from '../../src/responses/rollups/cli.ts';
import { grainOf, rollupCover, rulesServable } from '../../src/responses/rollups/read.ts';
import { ORG_SENTINEL, ceilMonth, ceilTo, floorMonth, floorTo, hourSlicesOf, sliceRanges } from '../../src/responses/rollups/slices.ts';

const t = (iso: string) => parseInstantMicros(iso)!;
const H = 3_600_000_000n;
const none = { org: false, slices: [] };

describe('rollups: slices and the read plan (pure)', () => {
  it('floor and ceil to hours and days, before 1970 too', () => {
    expect(floorTo(t('1960-05-05T10:30:00.5Z'), H)).to.equal(t('1960-05-05T10:00:00Z'));
    expect(ceilTo(t('1960-05-05T10:30:00.5Z'), H)).to.equal(t('1960-05-05T11:00:00Z'));
    expect(ceilTo(t('2024-01-01T10:00:00Z'), H)).to.equal(t('2024-01-01T10:00:00Z'));
    expect(floorTo(t('2024-01-01T23:59:59.999999Z'), 24n * H)).to.equal(t('2024-01-01T00:00:00Z'));
    expect(floorMonth(t('1960-02-29T23:59:59.999999Z'))).to.equal(t('1960-02-01T00:00:00Z'));
    expect(ceilMonth(t('2024-12-01T00:00:00.000001Z'))).to.equal(t('2025-01-01T00:00:00Z'));
    expect(ceilMonth(t('2024-12-01T00:00:00Z'))).to.equal(t('2024-12-01T00:00:00Z'));
  });

  it('the hour slices of rows, and their ranges merged when adjacent', () => {
    const rows = [
      { survey_id: 'A', created_at: '2024-01-01 10:59:59.999999' },
      { survey_id: 'a', created_at: '2024-01-01 10:00:00.000000' },
      { survey_id: 'b', created_at: '2024-01-01 11:00:00.000000' },
    ];
    expect(hourSlicesOf(rows)).to.deep.equal([{ surveyId: 'a', hour: t('2024-01-01T10:00:00Z') }, { surveyId: 'b', hour: t('2024-01-01T11:00:00Z') }]);
    const h = t('2024-01-01T10:00:00Z');
    expect(sliceRanges('hour', [h + 3n * H, h, h + H, h])).to.deep.equal([[h, h + 2n * H], [h + 3n * H, h + 4n * H]]);
    expect(sliceRanges('month', [t('2024-02-01T00:00:00Z'), t('2024-01-01T00:00:00Z')])).to.deep.equal([[t('2024-01-01T00:00:00Z'), t('2024-03-01T00:00:00Z')]]);
  });

  it('the window: whole hours, days and months inside the range, end inclusive to the microsecond', () => {
    const w = rollupCover({ start: '2024-01-01 10:30:00.000000', end: '2024-01-04 00:59:59.999999' }, none, 'month')!;
    expect([w.hourFrom, w.hourTo, w.dayFrom, w.dayTo]).to.deep.equal([t('2024-01-01T11:00:00Z'), t('2024-01-04T01:00:00Z'), t('2024-01-02T00:00:00Z'), t('2024-01-04T00:00:00Z')]);
    expect([w.days, w.months]).to.deep.equal([true, false]);
    const long = rollupCover({ start: '2024-01-31 23:00:00.000000', end: '2024-04-01 00:00:00.000000' }, none, 'month')!;
    expect([long.monthFrom, long.monthTo, long.months]).to.deep.equal([t('2024-02-01T00:00:00Z'), t('2024-04-01T00:00:00Z'), true]);
    expect(rollupCover({ start: '2024-01-31 23:00:00.000000', end: '2024-04-01 00:00:00.000000' }, none, 'day')!.months).to.equal(false);
    // One µs less at the end: hour 00:00 of the 4th is partial.
    expect(rollupCover({ end: '2024-01-04 00:59:59.999998' }, none, 'day')!.hourTo).to.equal(t('2024-01-04T00:00:00Z'));
    // Within one hour: nothing for the rollup.
    expect(rollupCover({ start: '2024-01-01 10:00:00.000001', end: '2024-01-01 11:00:00.000000' }, none, 'day')).to.equal(null);
    // Hourly buckets: no day rows.
    expect(rollupCover({ start: '2024-01-01 00:00:00.000000' }, none, 'hour')!.days).to.equal(false);
  });

  it('pending slices: their days are read from hours; the whole org pending reads the raw table', () => {
    const slice = { surveyId: 's', hour: t('2024-01-02T05:00:00Z') };
    const w = rollupCover(undefined, { org: false, slices: [slice] }, 'day')!;
    expect(w.pendingDays).to.deep.equal([{ surveyId: 's', hour: t('2024-01-02T00:00:00Z') }]);
    expect(rollupCover(undefined, { org: true, slices: [] }, 'day')).to.equal(null);
    expect(ORG_SENTINEL.hour).to.equal(t('1900-01-01T00:00:00Z'));
  });

  it('grain: month, day or hour by where every bucket starts, none inside an hour', () => {
    const day = planHistogram(t('2024-01-01T00:00:00Z'), t('2024-03-01T00:00:00Z'), 'day', 100);
    const hours = planHistogram(t('2024-01-01T05:00:00Z'), t('2024-01-02T00:00:00Z'), 'hour', 100);
    const odd = planHistogram(t('2024-01-01T05:30:00Z'), t('2024-01-02T00:00:00Z'), 'hour', 100);
    const months = planHistogram(t('2024-01-31T00:00:00Z'), t('2025-01-01T00:00:00Z'), 'month', 12);
    const calendar = planHistogram(t('2024-01-01T00:00:00Z'), t('2025-01-01T00:00:00Z'), 'month', 12);
    expect(grainOf([undefined])).to.equal('month');
    expect(grainOf([calendar])).to.equal('month');
    expect(grainOf([undefined, day])).to.equal('day');
    expect(grainOf([months])).to.equal('day');
    expect(grainOf([calendar, hours])).to.equal('hour');
    expect(grainOf([day, hours])).to.equal('hour');
    expect(grainOf([odd])).to.equal(null);
    expect(grainOf([planHistogram(t('2024-01-01T05:00:00Z'), t('2024-01-03T05:00:00Z'), 'hour', 2)])).to.equal('hour'); // 24 h steps from 05:00
  });

  it('rules: one answer level at most, no hidden field, created_at histograms only', () => {
    const date = (field: 'created_at' | 'ended_at') => ({ kind: 'date', field, minInterval: 'day', buckets: 10 }) as const;
    const answer = { kind: 'answer', field: 'answer', questionId: 'q' } as const;
    expect(rulesServable([{ kind: 'completion', field: 'completion' }, date('created_at'), answer])).to.equal(true);
    expect(rulesServable([answer, answer])).to.equal(false);
    expect(rulesServable([date('ended_at')])).to.equal(false);
    expect(rulesServable([{ kind: 'hidden_field', field: 'hidden_field', key: 'support' }])).to.equal(false);
  });

  it('rollups rebuild: arguments checked before any engine starts', () => {
    const parse = (argv: string[]) => rollupsOrg(parseArgs(argv, ROLLUPS_REBUILD.options, ROLLUPS_REBUILD.usage));
    expect(parse([])).to.equal(null);
    expect(parse(['--org', 'AAAAAAAA-0000-4000-8000-000000000000'])).to.equal('aaaaaaaa-0000-4000-8000-000000000000');
    expect(() => parse(['--org', 'nope'])).to.throw(UsageError, '--org');
    expect(() => parse(['--orgs', 'x'])).to.throw(UsageError, 'unknown option');
    expect(() => parse(['extra'])).to.throw(UsageError, 'unexpected argument');
  });
});
