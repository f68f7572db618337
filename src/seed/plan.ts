/**
 * The seed's plan: the surveys (ids, questions) of one org and seed, and every vocabulary flattened
 * into arrays and lookup tables. Everything here becomes query parameters of the generating SQL,
 * so the SQL text itself is constant and carries no values.
 */
import { lookupTable, nameUuid, shareBelow } from './distributions.ts';
import {
  CES_WEIGHTS,
  COMMENTS,
  CSAT_WEIGHTS,
  DEVICES,
  HOUR_WEIGHTS,
  LANGUAGES,
  LOCALES,
  NPS_WEIGHTS,
  PAGE_TITLES,
  PLATFORMS,
  ROLE_KEYS,
  ROLE_LABELS,
  ROLE_WEIGHTS,
} from './vocabulary.ts';

/** Question kinds, 1-based because they index `ctaTypes` in ClickHouse. */
export const QuestionKind = { nps: 1, csat: 2, ces: 3, text: 4, choice: 5 } as const;
export type QuestionKind = (typeof QuestionKind)[keyof typeof QuestionKind];
/** `cta_type` of each kind, in QuestionKind order. */
export const CTA_TYPES = ['nps', 'csat', 'ces', 'open_question', 'single_choice'] as const;

/** Survey shapes, used in turn: score first, then a "why?" and sometimes a role question. */
export const SURVEY_TEMPLATES: readonly (readonly QuestionKind[])[] = [
  [QuestionKind.nps, QuestionKind.text, QuestionKind.choice],
  [QuestionKind.csat, QuestionKind.text],
  [QuestionKind.ces, QuestionKind.text],
  [QuestionKind.nps, QuestionKind.csat, QuestionKind.text],
  [QuestionKind.ces, QuestionKind.choice, QuestionKind.text],
];

export const END_REASONS = ['closed', 'completed', 'expired', 'interrupted'] as const;
/** Share of each end reason among ended responses, in END_REASONS order. */
export const END_REASON_WEIGHTS = [18, 62, 8, 12];
export const COMPLETIONS = ['not_started', 'partially_completed', 'fully_completed'] as const;

/** Hidden field keys in the order they are written; `page_title` exists on the web only. */
export const HIDDEN_FIELD_KEYS = [
  'user_agent', 'os', 'support', 'platform', 'timezone', 'locale', 'country', 'logged_in', 'page_title', 'session_count',
] as const;
export const HIDDEN_FIELD_TYPES = [0, 0, 0, 0, 0, 0, 0, 1, 0, 2];

export interface SurveyPlan {
  readonly id: string;
  readonly scenarioId: string;
  readonly kinds: readonly QuestionKind[];
  readonly questionIds: readonly string[];
  readonly questionCorrelationIds: readonly string[];
  readonly actionIds: readonly string[];
  readonly actionCorrelationIds: readonly string[];
}

/** Surveys of one org and seed; ids are name-based, so reruns target the same surveys. */
export function planSurveys(orgId: string, seed: number, count: number): SurveyPlan[] {
  return Array.from({ length: count }, (_, s) => {
    const kinds = SURVEY_TEMPLATES[s % SURVEY_TEMPLATES.length];
    const id = nameUuid(orgId, seed, 'survey', s);
    const ids = (what: string) => kinds.map((_, q) => nameUuid(orgId, seed, 'survey', s, what, q));
    return {
      id,
      scenarioId: nameUuid(orgId, seed, 'survey', s, 'scenario'),
      kinds,
      questionIds: ids('question'),
      questionCorrelationIds: ids('question-correlation'),
      actionIds: ids('action'),
      actionCorrelationIds: ids('action-correlation'),
    };
  });
}

/** First 8 hex digits: the short form used in the `*_path` fields. */
const short = (uuid: string) => uuid.slice(0, 8);

/** Parameters that depend on the org, the seed and the surveys but not on the chunk. */
export function planParams(orgId: string, seed: number, surveys: readonly SurveyPlan[]): Record<string, unknown> {
  const npsTable = lookupTable(NPS_WEIGHTS);
  const sentimentOf = (lang: keyof typeof COMMENTS) => [COMMENTS[lang].positive, COMMENTS[lang].neutral, COMMENTS[lang].negative];
  const texts: string[] = [];
  const textStart: number[] = [];
  const textCount: number[] = [];
  for (const lang of LANGUAGES) {
    for (const list of sentimentOf(lang)) {
      textStart.push(texts.length + 1);
      textCount.push(list.length);
      texts.push(...list);
    }
  }
  const languageIndex = (language: string) => {
    const i = (LANGUAGES as readonly string[]).indexOf(language);
    if (i < 0) throw new Error(`vocabulary: locale language ${language} has no texts`);
    return i;
  };

  return {
    org: orgId,
    seed,
    surveyIds: surveys.map((s) => s.id),
    // Busy surveys first: survey i gets weight 1/(i+1)^0.6.
    surveyTable: lookupTable(surveys.map((_, i) => 1 / (i + 1) ** 0.6), surveys.map((_, i) => i + 1)),
    scenarioIds: surveys.map((s) => s.scenarioId),
    qKinds: surveys.map((s) => [...s.kinds]),
    qIds: surveys.map((s) => [...s.questionIds]),
    qCorrIds: surveys.map((s) => [...s.questionCorrelationIds]),
    aIds: surveys.map((s) => [...s.actionIds]),
    aCorrIds: surveys.map((s) => [...s.actionCorrelationIds]),
    qShort: surveys.map((s) => s.questionIds.map(short)),
    qCorrShort: surveys.map((s) => s.questionCorrelationIds.map(short)),
    aShort: surveys.map((s) => s.actionIds.map(short)),
    aCorrShort: surveys.map((s) => s.actionCorrelationIds.map(short)),
    ctaTypes: [...CTA_TYPES],
    channelIds: PLATFORMS.map((p) => nameUuid(orgId, seed, 'channel', p)),

    locLanguage: LOCALES.map((l) => l.language),
    locLanguageIdx: LOCALES.map((l) => languageIndex(l.language)),
    locName: LOCALES.map((l) => l.locale),
    locCountry: LOCALES.map((l) => l.country),
    locTimezone: LOCALES.map((l) => l.timezone),
    locOffsetMin: LOCALES.map((l) => l.utcOffsetMinutes),
    locTable: lookupTable(LOCALES.map((l) => l.weight), LOCALES.map((_, i) => i + 1)),

    devSupport: DEVICES.map((d) => d.support),
    devOs: DEVICES.map((d) => d.os),
    devPlatform: DEVICES.map((d) => d.platform),
    devUserAgent: DEVICES.map((d) => d.userAgent),
    devChannel: DEVICES.map((d) => PLATFORMS.indexOf(d.platform) + 1),
    devTable: lookupTable(DEVICES.map((d) => d.weight), DEVICES.map((_, i) => i + 1)),

    hourTable: lookupTable(HOUR_WEIGHTS),
    npsTable,
    csatTable: lookupTable(CSAT_WEIGHTS, [1, 2, 3, 4, 5]),
    cesTable: lookupTable(CES_WEIGHTS, [1, 2, 3, 4, 5, 6, 7]),
    // Mood quantiles where the NPS table turns neutral (7) and promoter (9): comments follow them.
    negativeBelow: shareBelow(npsTable, 7),
    positiveFrom: shareBelow(npsTable, 9),

    texts,
    textStart,
    textCount,
    // Two comments are joined by a space, except in Japanese.
    textJoiner: LANGUAGES.map((lang) => (lang === 'ja' ? '' : ' ')),
    roleKeys: [...ROLE_KEYS],
    roleLabels: LANGUAGES.flatMap((lang) => ROLE_LABELS[lang]),
    roleCount: ROLE_KEYS.length,
    roleTable: lookupTable(ROLE_WEIGHTS),
    pageTitles: [...PAGE_TITLES],
    pageTable: lookupTable(PAGE_TITLES.map((_, i) => 1 / (i + 1)), PAGE_TITLES.map((_, i) => i + 1)),

    // Emotions (fear, sadness, anger, joy) = base + spread * uniform, per sentiment (positive, neutral, negative).
    emotionBase: [[0, 0, 0, 0.55], [0.02, 0.05, 0.05, 0.2], [0.05, 0.3, 0.4, 0]],
    emotionSpread: [[0.05, 0.1, 0.08, 0.4], [0.1, 0.2, 0.2, 0.3], [0.3, 0.5, 0.5, 0.15]],
    // Customer-side alias: user-<n>@example.com.
    aliasPrefix: 'user-',
    aliasDomain: '@example.com',
    // Groups per respondent: 0 to 3.
    groupCountTable: lookupTable([30, 45, 20, 5]),

    endReasons: [...END_REASONS],
    endReasonTable: lookupTable(END_REASON_WEIGHTS, END_REASONS.map((_, i) => i + 1)),
    completions: [...COMPLETIONS],
    hfKeys: [...HIDDEN_FIELD_KEYS],
    hfTypes: HIDDEN_FIELD_TYPES,
  };
}
