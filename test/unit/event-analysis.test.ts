import { expect } from 'chai';
import * as v from 'valibot';
import { cohortSchema, toValueTest } from '../../src/events/analysis/cohort.ts';
import { funnelBodySchema, shapeSteps } from '../../src/events/analysis/funnel.ts';
import { periodIndex, periodStartAfter } from '../../src/events/analysis/retention.ts';
import { parseInstantMicros } from '../../src/query/histogram.ts';

/** The request side of funnels, retention and cohorts, and the pure helpers the compilers use (no engine). */
describe('event analysis: requests and pure helpers', () => {
  const issues = (schema: v.GenericSchema, input: unknown) =>
    (v.safeParse(schema, input).issues ?? []).map((i) => `${(i.path ?? []).map((p) => p.key).join('.')}: ${i.message}`);

  it('reads answer tests: value or values by operator, numbers for at most / at least, nothing for null', () => {
    expect(toValueTest({ operator: 'lte', value: 2 })).to.deep.equal({ op: 'lte', negate: false, value: 2 });
    expect(toValueTest({ operator: 'not_in', values: ['a', 3, true] })).to.deep.equal({ op: 'in', negate: true, values: ['a', 3, true] });
    expect(toValueTest({ operator: 'neq', value: 'x' })).to.deep.equal({ op: 'in', negate: true, values: ['x'] });
    expect(toValueTest({ operator: 'not_null' })).to.deep.equal({ op: 'null', negate: true });
    expect(toValueTest({ operator: 'gte', value: '4' })).to.deep.equal([{ field: 'value', message: 'must be a number' }]);
    expect(toValueTest({ operator: 'null', value: 1 })).to.deep.equal([{ field: 'value', message: 'operator "null" takes no value' }]);
    expect(toValueTest({ operator: 'in', value: 1 })).to.have.length(2);
  });

  it('keeps survey and copilot cohorts apart, each with its own range field', () => {
    expect(v.parse(cohortSchema, { nps: 'promotor' })).to.deep.include({ kind: 'survey', surveyIds: '*', nps: 'promotor' });
    expect(v.parse(cohortSchema, { copilot_rating: { operator: 'gte', value: 4 }, range: { field: 'timestamp', start: '2026-01-01' } }))
      .to.deep.include({ kind: 'copilot', rating: { op: 'gte', negate: false, value: 4 } });
    expect(issues(cohortSchema, { copilot_rating: { operator: 'gte', value: 4 }, survey_ids: ['0b6f3f5e-8d1c-4f0a-9a55-3f6f1a2b7c01'] })[0]).to.match(/^survey_ids: a copilot cohort/);
    expect(issues(cohortSchema, { nps: 'promotor', range: { field: 'timestamp' } })[0]).to.match(/^range: the range of a survey cohort is on "created_at"/);
    expect(issues(cohortSchema, { copilot_rating: { operator: 'contains', value: 'x' } })[0]).to.match(/^copilot_rating.operator: operator "contains" is not supported here/);
    expect(issues(cohortSchema, { nps: 'promoter' })[0]).to.match(/^nps: nps must be one of detractor, neutral, promotor/);
    expect(issues(cohortSchema, { range: { start: '2026-02-01', end: '2026-01-01' } })[0]).to.match(/range.start must not be after range.end/);
    expect(issues(cohortSchema, { answer: { question_id: 'q', operator: 'eq', value: 1 }, colour: 'red' })[0]).to.match(/^colour: unknown field "colour"/);
  });

  it('bounds a funnel: 2..10 steps, each with a filter, a window of at most 90 days', () => {
    const step = { filters: [{ key: 'event_name', operator: 'eq', value: 'a' }] };
    expect(v.parse(funnelBodySchema, { steps: [step, step] })).to.deep.include({ window_seconds: 14 * 86_400, order: 'ordered' });
    expect(issues(funnelBodySchema, { steps: [step, { filters: [] }] })[0]).to.match(/^steps.1.filters: a step needs at least one filter/);
    expect(issues(funnelBodySchema, { steps: Array(11).fill(step) })[0]).to.match(/^steps: steps holds 2 to 10 steps/);
    expect(issues(funnelBodySchema, { steps: [step, step], window_seconds: 7_776_001 })[0]).to.match(/^window_seconds/);
    expect(issues(funnelBodySchema, { steps: [step, step], window_seconds: 7_776_000 })).to.deep.equal([]);
  });

  it('counts periods as the engine does (days, Monday weeks, months across a new year)', () => {
    const at = (iso: string) => parseInstantMicros(iso)!;
    // toRelativeWeekNum('2026-11-02') = 2966 (a Monday); the Sunday before is in the week before.
    expect(periodIndex(at('2026-11-02T00:00:00Z'), 'week')).to.equal(2966);
    expect(periodIndex(at('2026-11-01T23:59:59.999999Z'), 'week')).to.equal(2965);
    expect(periodIndex(at('2026-01-31T12:00:00Z'), 'month')).to.equal(24313);
    expect(periodIndex(at('2025-12-31T23:59:59Z'), 'month')).to.equal(24312);
    expect(periodIndex(at('1970-01-02T00:00:00Z'), 'day')).to.equal(1);
    expect(periodIndex(at('1969-12-31T12:00:00Z'), 'day')).to.equal(-1);
  });

  it('finds the start of the n-th period after an instant, before 1970 and after 2149 too', () => {
    const at = (iso: string) => parseInstantMicros(iso)!;
    const iso = (us: bigint) => new Date(Number(us / 1000n)).toISOString();
    expect(iso(periodStartAfter(at('2026-11-04T15:00:00Z'), 'week', 0))).to.equal('2026-11-02T00:00:00.000Z');
    expect(iso(periodStartAfter(at('2026-11-08T23:59:59.999999Z'), 'week', 1))).to.equal('2026-11-09T00:00:00.000Z');
    expect(iso(periodStartAfter(at('2026-12-15T00:00:00Z'), 'month', 1))).to.equal('2027-01-01T00:00:00.000Z');
    expect(iso(periodStartAfter(at('2250-12-15T00:00:00Z'), 'month', 13))).to.equal('2252-01-01T00:00:00.000Z');
    expect(iso(periodStartAfter(at('1969-12-31T12:00:00Z'), 'day', 0))).to.equal('1969-12-31T00:00:00.000Z');
    expect(iso(periodStartAfter(at('1900-01-03T12:00:00Z'), 'week', 0))).to.equal('1900-01-01T00:00:00.000Z');
  });

  it('shapes steps: shares of the first and previous step, times only after the first step and when someone reached it', () => {
    const q = { steps: [{ filtersBool: 'AND' as const, filters: [] }, { filtersBool: 'AND' as const, filters: [] }, { filtersBool: 'AND' as const, filters: [] }], order: 'ordered' as const };
    const steps = shapeSteps(q, { grp: 0, u1: '3', u2: '0', u3: '0', q2: [0, 0], q3: [0, 0] });
    expect(steps.map((s) => [s.users, s.conversion_from_first, s.conversion_from_previous, s.median_seconds_from_previous])).to.deep.equal([
      [3, 1, 1, null], [0, 0, 0, null], [0, 0, null, null],
    ]);
    expect(shapeSteps(q, { grp: 0, u1: 3, u2: 2, u3: 1, q2: [1500.4, 2999.6], q3: [10, 10] })[1]).to.deep.include({ conversion_from_first: 0.6667, median_seconds_from_previous: 1.5, p90_seconds_from_previous: 3 });
  });
});
