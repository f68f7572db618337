/**
 * Survey metrics of a set of responses (an aggregation bucket, the whole scope, one side of a
 * release): NPS, CSAT, CES and completion, computed exactly as the summary computes them
 * (summary.ts: whole-number scores on each scale, every answer once, the same 2-decimal rounding),
 * each score with its `n` and 95% interval (src/metrics/statistics.ts), and against a second set
 * of responses the change of each figure and whether it is significant at 95%.
 *
 * The engine returns, per set, the score counts of each scale and the completion counts
 * (`MetricRow`): every figure, interval and test derives from those integers here, so the raw
 * table and the rollups (which hold the same counts per group of responses) give the same answer.
 */
import * as v from 'valibot';
import {
  meanDifference, meanInterval, momentsOf, npsDifference, npsInterval, proportionDifference, round, roundInterval, wilsonInterval, type Difference,
} from '../metrics/statistics.ts';
import { COMPLETION_VALUES, type Completion } from './filters.ts';
import { SCALES, roundRatio } from './summary.ts';

export const METRIC_NAMES = ['nps', 'csat', 'ces', 'completion'] as const;
export type MetricName = (typeof METRIC_NAMES)[number];

/** `metrics` of a request: 1..4 distinct names; an unknown one is a 400 naming it. */
export const metricsSchema = v.pipe(
  v.array(
    v.picklist(METRIC_NAMES, (issue) => `unknown metric ${issue.received}; metrics are ${METRIC_NAMES.join(', ')}`),
    'metrics must be an array of metric names',
  ),
  v.minLength(1, `metrics needs at least one of ${METRIC_NAMES.join(', ')}`),
  v.maxLength(METRIC_NAMES.length, `metrics holds at most ${METRIC_NAMES.length} names`),
  v.transform((names) => METRIC_NAMES.filter((m) => names.includes(m))),
);

/** Score -> count per scale, and responses per completion value, of one set of responses. */
export interface MetricCounts {
  readonly nps: ReadonlyMap<number, number>;
  readonly csat: ReadonlyMap<number, number>;
  readonly ces: ReadonlyMap<number, number>;
  readonly completion: Readonly<Record<Completion, number>>;
}

export const NO_COUNTS: MetricCounts = Object.freeze({
  nps: new Map(), csat: new Map(), ces: new Map(),
  completion: Object.freeze({ not_started: 0, partially_completed: 0, fully_completed: 0 }),
});

/**
 * The engine's columns for one set: `sumMap` results, printed by JSONEachRow as
 * [[keys], [counts]] (counts as text: 64-bit integers are quoted).
 */
export interface MetricRow {
  m_nps?: [unknown[], unknown[]] | null;
  m_csat?: [unknown[], unknown[]] | null;
  m_ces?: [unknown[], unknown[]] | null;
  m_completion?: [unknown[], unknown[]] | null;
}

const pairs = (column: [unknown[], unknown[]] | null | undefined): [string, number][] =>
  column ? column[0].map((k, i) => [String(k), Number(column[1][i])]) : [];

/** A row's columns -> counts (whole-number scores only: the columns hold nothing else). */
export function countsOf(row: MetricRow | undefined): MetricCounts {
  if (!row) return NO_COUNTS;
  const scores = (column: [unknown[], unknown[]] | null | undefined) => new Map(pairs(column).filter(([, n]) => n > 0).map(([k, n]) => [Number(k), n]));
  const completion = { not_started: 0, partially_completed: 0, fully_completed: 0 };
  for (const [k, n] of pairs(row.m_completion)) if ((COMPLETION_VALUES as readonly string[]).includes(k)) completion[k as Completion] += n;
  return { nps: scores(row.m_nps), csat: scores(row.m_csat), ces: scores(row.m_ces), completion };
}

// --- the JSON ---------------------------------------------------------------------------------------

type Ci = [number, number] | null;
interface Change { delta: number | null; delta_ci95: Ci; significant: boolean }
export interface NpsMetric { score: number | null; detractor: number; neutral: number; promotor: number; total: number; ci95: Ci }
export interface MeanMetric { avg: number | null; n: number; ci95: Ci }
export interface CompletionMetric { not_started: number; partially_completed: number; fully_completed: number; rate: number | null; ci95: Ci }
export interface Metrics {
  nps?: NpsMetric | (NpsMetric & Change);
  csat?: MeanMetric | (MeanMetric & Change);
  ces?: MeanMetric | (MeanMetric & Change);
  completion?: CompletionMetric | (CompletionMetric & Change);
}

/** Decimals of the figures: scores and averages as the summary (2), rates as shares (4). */
const SCORE_DECIMALS = 2;
const RATE_DECIMALS = 4;

function npsGroups(counts: ReadonlyMap<number, number>) {
  let detractor = 0;
  let neutral = 0;
  let promotor = 0;
  for (const [score, n] of counts) {
    if (score <= 6) detractor += n;
    else if (score <= 8) neutral += n;
    else promotor += n;
  }
  return { detractor, neutral, promotor, total: detractor + neutral + promotor };
}

function nps(counts: MetricCounts): NpsMetric {
  const g = npsGroups(counts.nps);
  return {
    score: g.total === 0 ? null : roundRatio((g.promotor - g.detractor) * 100, g.total),
    ...g,
    ci95: roundInterval(npsInterval({ promotors: g.promotor, detractors: g.detractor, total: g.total }), SCORE_DECIMALS),
  };
}

function mean(scale: 'csat' | 'ces', counts: MetricCounts): MeanMetric {
  const m = momentsOf(counts[scale]);
  return {
    avg: m.n === 0 ? null : roundRatio(m.sum, m.n),
    n: m.n,
    ci95: roundInterval(meanInterval(m, SCALES[scale].min, SCALES[scale].max), SCORE_DECIMALS),
  };
}

const respondents = (c: MetricCounts) => c.completion.not_started + c.completion.partially_completed + c.completion.fully_completed;

function completion(counts: MetricCounts): CompletionMetric {
  const all = respondents(counts);
  const full = counts.completion.fully_completed;
  return { ...counts.completion, rate: all === 0 ? null : round(full / all, RATE_DECIMALS), ci95: roundInterval(wilsonInterval(full, all), RATE_DECIMALS) };
}

/**
 * `delta` is the difference of the two figures as shown (main minus other, rounded like them), so
 * it reads as the subtraction a user would do; `delta_ci95` and `significant` come from the exact
 * counts (`diff`). A side with nothing to compute from gives a null delta, not significant.
 */
function change(main: number | null, other: number | null, diff: Difference | null, decimals: number): Change {
  return {
    delta: main === null || other === null ? null : round(main - other, decimals),
    delta_ci95: diff ? roundInterval(diff.ci95, decimals) : null,
    significant: diff?.significant ?? false,
  };
}

/** The metrics asked for, of `counts`; with `against`, each also carries its change from it. */
export function shapeMetrics(names: readonly MetricName[], counts: MetricCounts, against?: MetricCounts): Metrics {
  const out: Metrics = {};
  for (const name of names) {
    switch (name) {
      case 'nps': {
        const m = nps(counts);
        if (!against) out.nps = m;
        else {
          const o = npsGroups(against.nps);
          const other = nps(against);
          const diff = npsDifference({ promotors: m.promotor, detractors: m.detractor, total: m.total }, { promotors: o.promotor, detractors: o.detractor, total: o.total });
          out.nps = { ...m, ...change(m.score, other.score, diff, SCORE_DECIMALS) };
        }
        break;
      }
      case 'csat':
      case 'ces': {
        const m = mean(name, counts);
        out[name] = against ? { ...m, ...change(m.avg, mean(name, against).avg, meanDifference(momentsOf(counts[name]), momentsOf(against[name])), SCORE_DECIMALS) } : m;
        break;
      }
      case 'completion': {
        const m = completion(counts);
        if (!against) out.completion = m;
        else {
          const diff = proportionDifference(
            { successes: counts.completion.fully_completed, n: respondents(counts) },
            { successes: against.completion.fully_completed, n: respondents(against) },
          );
          out.completion = { ...m, ...change(m.rate, completion(against).rate, diff, RATE_DECIMALS) };
        }
        break;
      }
    }
  }
  return out;
}

// --- the answer schema (OpenAPI, and the tests' check of live answers) -------------------------------

const count = v.pipe(v.number(), v.integer(), v.minValue(0));
const ci = v.nullable(v.tuple([v.number(), v.number()]));
const changeEntries = { delta: v.optional(v.nullable(v.number())), delta_ci95: v.optional(ci), significant: v.optional(v.boolean()) };
export const metricsResultSchema = v.object({
  nps: v.optional(v.object({ score: v.nullable(v.number()), detractor: count, neutral: count, promotor: count, total: count, ci95: ci, ...changeEntries })),
  csat: v.optional(v.object({ avg: v.nullable(v.number()), n: count, ci95: ci, ...changeEntries })),
  ces: v.optional(v.object({ avg: v.nullable(v.number()), n: count, ci95: ci, ...changeEntries })),
  completion: v.optional(v.object({
    not_started: count, partially_completed: count, fully_completed: count, rate: v.nullable(v.number()), ci95: ci, ...changeEntries,
  })),
});
