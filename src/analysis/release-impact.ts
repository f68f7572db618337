/**
 * SEARCH /1.0/release/<id>/impact (its route: src/releases/routes.ts): what changed around a
 * release. The N days after released_at (default 14; cut at now, so a recent release compares the
 * days it has had) against as many days right before it:
 * - survey metrics (NPS, CSAT, CES, completion; src/responses/metrics.ts), overall and, with
 *   `survey_ids`, per survey: computed by the survey aggregation (rollup-served where it can), the
 *   change on `after` (after minus before, its 95% interval, significant);
 * - events: count and distinct users of the 20 most frequent event names of both windows (events
 *   without a name, page views or identify, are not listed), each change tested as Poisson counts;
 * - copilot: the satisfaction rate (satisfaction events whose rating is in the top quarter of its
 *   scale: (rating - min) / (max - min) >= 0.75, so 4 and 5 on 1-5, 8..10 on 0-10 or 1-10) and the
 *   conversion rate (users who sent a prompt and converted in the window, of those who sent a
 *   prompt), Wilson intervals and Newcombe's difference.
 *
 * Scopes: the answer holds survey metrics (data of `responses:read`) and event figures (data of
 * `events:read`), so a token needs one of the two, and gets the parts its scopes allow; `omitted`
 * names the others. The release itself is shown to either (releases also mark the survey
 * histograms). `releases`, the deploy pipelines' write credential, reads nothing here.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import * as v from 'valibot';
import { DT64, ParamBag, compiled, type CompiledQuery, type RunQuery } from '../clickhouse/sql.ts';
import { conflict, notFound } from '../errors.ts';
import { EventSource, type EventSelection } from '../events/read/source.ts';
import { countDifference, proportionDifference, round, roundedRatio, roundInterval, wilsonInterval } from '../metrics/statistics.ts';
import { MICROS_PER_DAY, formatDbMicros, formatMicros, parseInstantMicros } from '../query/histogram.ts';
import { requestRunners } from '../query/request-cache.ts';
import { RANKED_BUCKETS_SETTINGS } from '../query/ranked-buckets.ts';
import { UUID_PATTERN } from '../uuid.ts';
import { runAggregation, countsByPath } from '../responses/aggregation.ts';
import { selectionOf } from '../responses/compile.ts';
import type { GroupByRule } from '../responses/group-by.ts';
import { METRIC_NAMES, metricsResultSchema, shapeMetrics, type Metrics } from '../responses/metrics.ts';
import type { Scope as TokenScope } from '../tokens/tokens.ts';
import { jsonObject } from '../validation.ts';
import { releaseSchema, type Release } from '../releases/schema.ts';
import { findLatestRelease, findRelease } from '../releases/store.ts';

export const IMPACT_DESCRIPTION =
  'Compares the `days` (default 14, at most 90) after released_at, cut at now, with as many days right before it. Survey metrics (NPS, CSAT, CES, ' +
  'completion, as the aggregation computes them), overall and per survey of `survey_ids`; `after` carries each change (after minus before, delta_ci95, ' +
  'significant at 95%). Events: count and distinct users of the 20 most frequent event names, each change tested as Poisson counts. Copilot: ' +
  'satisfaction rate (ratings in the top quarter of their scale) and conversion rate (prompting users who converted), Wilson intervals, Newcombe ' +
  'differences. Scopes: responses:read gives the survey metrics, events:read the events and copilot parts; a token needs one of them, and `omitted` ' +
  'names the parts it does not get. `latest` instead of an id: the newest release already released. A release of another organization is a 404, ' +
  'like an unknown one; a release in the future is a 409.';

export const MAX_IMPACT_DAYS = 90;
export const MAX_IMPACT_SURVEYS = 20;
/** Event names listed, the most frequent over both windows. */
export const TOP_EVENT_NAMES = 20;

const daysMessage = `days must be an integer from 1 to ${MAX_IMPACT_DAYS}`;
export const impactBodySchema = jsonObject({
  days: v.optional(v.pipe(v.number(daysMessage), v.integer(daysMessage), v.minValue(1, daysMessage), v.maxValue(MAX_IMPACT_DAYS, daysMessage)), 14),
  survey_ids: v.optional(v.pipe(
    v.array(v.pipe(v.string('survey_ids holds survey UUIDs'), v.regex(UUID_PATTERN, 'must be a survey UUID'), v.toLowerCase()), 'survey_ids must be an array of survey UUIDs'),
    v.minLength(1, 'survey_ids must not be empty (leave it out for every survey)'),
    v.maxLength(MAX_IMPACT_SURVEYS, `survey_ids holds at most ${MAX_IMPACT_SURVEYS} surveys`),
  )),
}, 'the impact body');
export type ImpactBody = v.InferOutput<typeof impactBodySchema>;

// --- the answer ------------------------------------------------------------------------------------

const count = v.pipe(v.number(), v.integer(), v.minValue(0));
const ci = v.nullable(v.tuple([v.number(), v.number()]));
const range = v.object({ start: v.string(), end: v.string() });
const side = v.object({ responses: v.optional(count), metrics: v.optional(metricsResultSchema) });
const rate = v.object({
  rate: v.nullable(v.number()), n: count, ci95: ci,
  delta: v.optional(v.nullable(v.number())), delta_ci95: v.optional(ci), significant: v.optional(v.boolean()),
});
const eventSide = v.object({
  count, users: count,
  count_delta: v.optional(v.number()), count_delta_ci95: v.optional(ci), count_significant: v.optional(v.boolean()),
  users_delta: v.optional(v.number()), users_delta_ci95: v.optional(ci), users_significant: v.optional(v.boolean()),
});
export const impactResultSchema = v.object({
  release: releaseSchema,
  days: count,
  before: v.object({ range, responses: v.optional(count), metrics: v.optional(metricsResultSchema) }),
  after: v.object({ range, responses: v.optional(count), metrics: v.optional(metricsResultSchema) }),
  surveys: v.optional(v.array(v.object({ survey_id: v.string(), before: side, after: side }))),
  events: v.optional(v.array(v.object({ event_name: v.string(), before: eventSide, after: eventSide }))),
  copilot: v.optional(v.object({ satisfaction: v.object({ before: rate, after: rate }), conversion: v.object({ before: rate, after: rate }) })),
  omitted: v.optional(v.array(v.string())),
});
export type ImpactResult = v.InferOutput<typeof impactResultSchema>;

// --- windows ---------------------------------------------------------------------------------------

export interface ImpactWindows {
  /** released_at, µs: `after` starts there. */
  at: bigint;
  before: { start: bigint; end: bigint };
  after: { start: bigint; end: bigint };
}

/** The windows (µs, inclusive): N days after, cut at now, and as long right before. Pure. */
export function impactWindows(releasedAt: bigint, days: number, nowMicros: bigint): ImpactWindows | null {
  const end = releasedAt + BigInt(days) * MICROS_PER_DAY - 1n;
  const afterEnd = end < nowMicros ? end : nowMicros;
  if (afterEnd < releasedAt) return null;
  const length = afterEnd - releasedAt + 1n;
  return { at: releasedAt, before: { start: releasedAt - length, end: releasedAt - 1n }, after: { start: releasedAt, end: afterEnd } };
}

const apiRange = (r: { start: bigint; end: bigint }) => ({ start: formatMicros(r.start), end: formatMicros(r.end) });

// --- survey metrics ----------------------------------------------------------------------------------

const BY_SURVEY: readonly GroupByRule[] = [{ kind: 'survey_id', field: 'survey_id' }];

async function surveyPart(run: RunQuery, fresh: RunQuery, orgId: string, w: ImpactWindows, surveyIds: readonly string[] | undefined) {
  // The survey aggregation by survey with every metric: its top level is the whole window.
  const read = (r: { start: bigint; end: bigint }) =>
    runAggregation(run, selectionOf(orgId, surveyIds ? [...surveyIds] : '*', { filters_bool: 'AND', filters: [], range: { field: 'created_at', start: formatDbMicros(r.start), end: formatDbMicros(r.end) } }), BY_SURVEY, { metrics: METRIC_NAMES, fresh });
  const [before, after] = await Promise.all([read(w.before), read(w.after)]);
  const b = countsByPath(BY_SURVEY, before.rows);
  const a = countsByPath(BY_SURVEY, after.rows);
  const responses = (c: ReturnType<typeof b>) => c.completion.not_started + c.completion.partially_completed + c.completion.fully_completed;
  const sides = (path: string[]) => {
    const [from, to] = [b(path), a(path)];
    return {
      before: { responses: responses(from), metrics: shapeMetrics(METRIC_NAMES, from) as Metrics },
      after: { responses: responses(to), metrics: shapeMetrics(METRIC_NAMES, to, { from, to }) as Metrics },
    };
  };
  return { overall: sides([]), surveys: surveyIds?.map((id) => ({ survey_id: id, ...sides([id]) })) };
}

// --- events ------------------------------------------------------------------------------------------

const eventScope = (orgId: string, w: ImpactWindows, filters: EventSelection['filters']): EventSelection => ({
  orgId, filtersBool: 'AND', filters, range: { start: formatDbMicros(w.before.start), end: formatDbMicros(w.after.end) },
});

/** Count and distinct users per event name in each window, the most frequent names first. */
export function compileEventNames(orgId: string, w: ImpactWindows): CompiledQuery {
  const bag = new ParamBag();
  const source = new EventSource(eventScope(orgId, w, [{ kind: 'event_name', op: 'null', negate: true }]), bag).from();
  const at = bag.add(formatDbMicros(w.at), DT64);
  return compiled(
    `SELECT event_name, countIf(timestamp < ${at}) AS before_count, countIf(timestamp >= ${at}) AS after_count, ` +
      `uniqExactIf(user_id, timestamp < ${at}) AS before_users, uniqExactIf(user_id, timestamp >= ${at}) AS after_users ` +
      `${source} GROUP BY event_name ORDER BY before_count + after_count DESC, event_name LIMIT ${bag.add(TOP_EVENT_NAMES, 'UInt32')}`,
    bag,
  );
}

/**
 * The two numbers of a rating scale ('1-5', '0..10', '1 to 7'), and a rating read as a number:
 * satisfied in the top quarter of the scale. The pattern is a constant of this file.
 */
const SCALE_NUMBERS = "extractAll(rating_scale, '[0-9]+(?:[.][0-9]+)?')";
const SATISFACTION_SQL =
  `toFloat64OrNull(rating) AS r, ${SCALE_NUMBERS} AS scale, if(length(scale) = 2, toFloat64OrNull(scale[1]), NULL) AS lo, ` +
  'if(length(scale) = 2, toFloat64OrNull(scale[2]), NULL) AS hi, ' +
  "event_name = 'service_copilot_satisfaction' AND ifNull(hi > lo AND r >= lo AND r <= hi, false) AS rated, " +
  'rated AND (r - lo) >= 0.75 * (hi - lo) AS satisfied';

/** Satisfaction and conversion counts of each window (copilot events only). */
export function compileCopilot(orgId: string, w: ImpactWindows): CompiledQuery {
  const bag = new ParamBag();
  const source = new EventSource(eventScope(orgId, w, [{ kind: 'type', op: 'eq', negate: false, values: ['copilot'] }]), bag).from();
  const at = bag.add(formatDbMicros(w.at), DT64);
  const ratings = `SELECT timestamp >= ${at} AS after, ${SATISFACTION_SQL} ${source}`;
  const users =
    `SELECT user_id, timestamp >= ${at} AS after, max(event_name = 'service_copilot_user_prompt') AS prompted, ` +
    `max(event_name = 'service_copilot_conversion') AS converted ${source} GROUP BY user_id, after`;
  return compiled(
    'SELECT s.*, c.* FROM ' +
      '(SELECT countIf(rated AND NOT after) AS rated_before, countIf(satisfied AND NOT after) AS satisfied_before, ' +
      `countIf(rated AND after) AS rated_after, countIf(satisfied AND after) AS satisfied_after FROM (${ratings})) AS s CROSS JOIN ` +
      '(SELECT countIf(prompted AND NOT after) AS prompted_before, countIf(prompted AND converted AND NOT after) AS converted_before, ' +
      `countIf(prompted AND after) AS prompted_after, countIf(prompted AND converted AND after) AS converted_after FROM (${users})) AS c`,
    bag,
  );
}

type NameRow = { event_name: string; before_count: string | number; after_count: string | number; before_users: string | number; after_users: string | number };
type CopilotRow = Record<`${'rated' | 'satisfied' | 'prompted' | 'converted'}_${'before' | 'after'}`, string | number>;

function eventsOf(rows: readonly NameRow[]) {
  return rows.map((r) => {
    const [bc, ac, bu, au] = [r.before_count, r.after_count, r.before_users, r.after_users].map(Number);
    const counts = countDifference(ac, bc);
    const users = countDifference(au, bu);
    return {
      event_name: r.event_name,
      before: { count: bc, users: bu },
      after: {
        count: ac, users: au,
        count_delta: counts.delta, count_delta_ci95: roundInterval(counts.ci95, 2), count_significant: counts.significant,
        users_delta: users.delta, users_delta_ci95: roundInterval(users.ci95, 2), users_significant: users.significant,
      },
    };
  });
}

function rateOf(successes: number, n: number) {
  return { rate: n === 0 ? null : roundedRatio(successes, n, 4), n, ci95: roundInterval(wilsonInterval(successes, n), 4) };
}

function ratesOf(beforeX: number, beforeN: number, afterX: number, afterN: number) {
  const diff = proportionDifference({ successes: afterX, n: afterN }, { successes: beforeX, n: beforeN });
  const [b, a] = [rateOf(beforeX, beforeN), rateOf(afterX, afterN)];
  return {
    before: b,
    after: { ...a, delta: a.rate === null || b.rate === null ? null : round(a.rate - b.rate, 4), delta_ci95: diff ? roundInterval(diff.ci95, 4) : null, significant: diff?.significant ?? false },
  };
}

function copilotOf(row: CopilotRow | undefined) {
  const n = (k: keyof CopilotRow) => Number(row?.[k] ?? 0);
  return {
    satisfaction: ratesOf(n('satisfied_before'), n('rated_before'), n('satisfied_after'), n('rated_after')),
    conversion: ratesOf(n('converted_before'), n('prompted_before'), n('converted_after'), n('prompted_after')),
  };
}

// --- the request ---------------------------------------------------------------------------------------

/** `latest`, or a release id: the newest release already released, or that one. */
export type ReleaseRef = 'latest' | { id: string };

/** The release's impact for a token of the organization with these scopes. */
export async function releaseImpact(client: ClickHouseClient, orgId: string, scopes: readonly TokenScope[], ref: ReleaseRef, body: ImpactBody, now = Date.now()): Promise<ImpactResult> {
  const release: Release | undefined = ref === 'latest' ? await findLatestRelease(client, orgId, BigInt(now) * 1000n) : await findRelease(client, orgId, ref.id);
  // An id of another organization is unknown here, like one that never existed.
  if (!release) throw notFound(ref === 'latest' ? 'The organization has no release yet' : `No release ${ref.id}`);
  const w = impactWindows(parseInstantMicros(release.released_at)!, body.days, BigInt(now) * 1000n);
  if (!w) throw conflict(`The release is in the future (released_at ${release.released_at}): its impact can be measured once it has been released`);
  const surveys = scopes.includes('responses:read');
  const events = scopes.includes('events:read');
  const { run, fresh } = requestRunners(client, RANKED_BUCKETS_SETTINGS);
  const [survey, names, copilot] = await Promise.all([
    surveys ? surveyPart(run, fresh, orgId, w, body.survey_ids) : undefined,
    events ? fresh<NameRow>(compileEventNames(orgId, w)) : undefined,
    events ? fresh<CopilotRow>(compileCopilot(orgId, w)) : undefined,
  ]);
  const omitted = [...(surveys ? [] : ['survey metrics (needs responses:read)']), ...(events ? [] : ['events and copilot (needs events:read)'])];
  return {
    release,
    days: body.days,
    before: { range: apiRange(w.before), ...survey?.overall.before },
    after: { range: apiRange(w.after), ...survey?.overall.after },
    ...(survey?.surveys ? { surveys: survey.surveys } : {}),
    ...(names ? { events: eventsOf(names) } : {}),
    ...(copilot ? { copilot: copilotOf(copilot[0]) } : {}),
    ...(omitted.length ? { omitted } : {}),
  };
}
