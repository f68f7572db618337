import { expect } from 'chai';
import fc from 'fast-check';
import { lookupTable, nameUuid, shareBelow, TABLE_SIZE } from '../../src/seed/distributions.ts';
import { CTA_TYPES, planParams, planSurveys, QuestionKind, SURVEY_TEMPLATES } from '../../src/seed/plan.ts';
import { groupPool, respondentPool, toDateTime64Param } from '../../src/seed/responses.ts';
import { SEED_INSERT_SQL } from '../../src/seed/sql.ts';
import { COMMENTS, LANGUAGES, LOCALES, NPS_WEIGHTS, ROLE_KEYS, ROLE_LABELS } from '../../src/seed/vocabulary.ts';

const ORG = '0b6f3c52-4a0e-4c47-9d8e-2f4f3f0b9a11';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const count = <T>(xs: readonly T[], x: T) => xs.filter((y) => y === x).length;

describe('seed plan', () => {
  it('names ids with uuid v5, byte-identical to the hand-written SHA-1 ids it replaced', () => {
    expect([nameUuid('org', 1, 'survey'), nameUuid('x'), nameUuid('ünï', 42)]).to.deep.equal([
      '7dfba75a-b689-596d-a70f-3a7817287851',
      'a8997844-432b-5f3c-a7b2-692a534f73ae',
      '7c1b4d33-d1cc-5102-a00a-c36ea591160f',
    ]);
  });

  describe('lookupTable', () => {
    it('gives each value a share of slots proportional to its weight', () => {
      const t = lookupTable([1, 2, 7], ['a', 'b', 'c']);
      expect(t).to.have.length(TABLE_SIZE);
      expect([count(t, 'a'), count(t, 'b'), count(t, 'c')]).to.deep.equal([100, 200, 700]);
    });

    it('defaults values to the index and keeps every positive weight', () => {
      const t = lookupTable([1_000_000, 1, 0]);
      expect(count(t, 1)).to.equal(1);
      expect(count(t, 2)).to.equal(0);
      expect(count(t, 0)).to.equal(TABLE_SIZE - 1);
    });

    it('always fills exactly TABLE_SIZE slots, each weight close to its share', () => {
      fc.assert(
        fc.property(fc.array(fc.double({ min: 0.001, max: 1000, noNaN: true }), { minLength: 1, maxLength: 50 }), (weights) => {
          const t = lookupTable(weights);
          expect(t).to.have.length(TABLE_SIZE);
          const total = weights.reduce((a, b) => a + b, 0);
          weights.forEach((w, i) => {
            const share = (w / total) * TABLE_SIZE;
            expect(count(t, i)).to.be.within(Math.max(1, Math.floor(share) - weights.length), Math.ceil(share) + 1);
          });
        }),
      );
    });

    it('rejects empty, negative and all-zero weights', () => {
      expect(() => lookupTable([])).to.throw(/no weights/);
      expect(() => lookupTable([1, -1])).to.throw(/>= 0/);
      expect(() => lookupTable([0, 0])).to.throw(/sum to 0/);
    });
  });

  it('nameUuid is a stable version-5 UUID of its parts', () => {
    const a = nameUuid(ORG, 0, 'survey', 1);
    expect(a).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(nameUuid(ORG, 0, 'survey', 1)).to.equal(a);
    expect(nameUuid(ORG, 1, 'survey', 1)).to.not.equal(a);
    // Parts are separated, so ("ab", "c") and ("a", "bc") differ.
    expect(nameUuid('ab', 'c')).to.not.equal(nameUuid('a', 'bc'));
  });

  it('toDateTime64Param writes UTC with six fraction digits', () => {
    expect(toDateTime64Param(new Date('2024-01-02T03:04:05.678Z'))).to.equal('2024-01-02 03:04:05.678000');
  });

  it('pools respondents and groups by the number of responses', () => {
    expect(respondentPool(1)).to.equal(1);
    expect(respondentPool(10_000)).to.equal(6_000);
    expect(groupPool(10)).to.equal(3);
    expect(groupPool(10_000)).to.equal(150);
    expect(groupPool(10_000_000)).to.equal(5000);
  });

  describe('surveys', () => {
    it('are the same for the same org and seed, different otherwise', () => {
      const a = planSurveys(ORG, 0, 7);
      expect(planSurveys(ORG, 0, 7)).to.deep.equal(a);
      expect(planSurveys(ORG, 1, 7)[0].id).to.not.equal(a[0].id);
      expect(new Set(a.map((s) => s.id)).size).to.equal(7);
    });

    it('cycle through the templates, every question with its own ids', () => {
      const surveys = planSurveys(ORG, 0, SURVEY_TEMPLATES.length + 1);
      surveys.forEach((s, i) => {
        expect(s.kinds).to.deep.equal(SURVEY_TEMPLATES[i % SURVEY_TEMPLATES.length]);
        for (const ids of [s.questionIds, s.questionCorrelationIds, s.actionIds, s.actionCorrelationIds]) {
          expect(ids).to.have.length(s.kinds.length);
          ids.forEach((id) => expect(id).to.match(UUID));
        }
      });
      const all = surveys.flatMap((s) => [s.id, s.scenarioId, ...s.questionIds, ...s.questionCorrelationIds, ...s.actionIds, ...s.actionCorrelationIds]);
      expect(new Set(all).size).to.equal(all.length);
    });

    it('every template has at least two questions (partial completion needs one unanswered) and a score', () => {
      for (const kinds of SURVEY_TEMPLATES) {
        expect(kinds.length).to.be.at.least(2);
        expect(kinds.some((k) => k === QuestionKind.nps || k === QuestionKind.csat || k === QuestionKind.ces)).to.equal(true);
      }
      expect(CTA_TYPES[QuestionKind.nps - 1]).to.equal('nps');
      expect(CTA_TYPES[QuestionKind.csat - 1]).to.equal('csat');
      expect(CTA_TYPES[QuestionKind.ces - 1]).to.equal('ces');
    });
  });

  describe('parameters', () => {
    const params = planParams(ORG, 0, planSurveys(ORG, 0, 5)) as Record<string, any>;

    it('index every vocabulary consistently', () => {
      expect(params.locLanguage).to.have.length(LOCALES.length);
      for (const l of LOCALES) expect(l.locale.startsWith(`${l.language}-`), l.locale).to.equal(true);
      expect(params.textStart).to.have.length(LANGUAGES.length * 3);
      expect(params.roleLabels).to.have.length(LANGUAGES.length * ROLE_KEYS.length);
      for (const lang of LANGUAGES) {
        expect(ROLE_LABELS[lang]).to.have.length(ROLE_KEYS.length);
        for (const sentiment of ['positive', 'neutral', 'negative'] as const) expect(COMMENTS[lang][sentiment].length).to.be.at.least(2);
      }
      // The last text group ends at the last text (1-based).
      expect(params.textStart.at(-1) + params.textCount.at(-1) - 1).to.equal(params.texts.length);
      for (const table of ['surveyTable', 'locTable', 'devTable', 'hourTable', 'npsTable', 'csatTable', 'cesTable', 'roleTable', 'pageTable', 'endReasonTable', 'groupCountTable']) {
        expect(params[table], table).to.have.length(TABLE_SIZE);
      }
    });

    it('skew NPS toward promoters with a tail of detractors', () => {
      const nps: number[] = params.npsTable;
      const promoters = 1 - shareBelow(nps, 9);
      const detractors = shareBelow(nps, 7);
      expect(promoters).to.be.within(0.45, 0.6);
      expect(detractors).to.be.within(0.1, 0.25);
      expect(NPS_WEIGHTS).to.have.length(11);
    });
  });

  describe('generating SQL', () => {
    it('holds no value from the vocabulary or the plan: they travel as parameters', () => {
      const params = planParams(ORG, 0, planSurveys(ORG, 0, 5));
      const strings = Object.values(params).flat(2).filter((v): v is string => typeof v === 'string' && v.length > 0);
      for (const s of strings) expect(SEED_INSERT_SQL, s).to.not.contain(`'${s}'`);
      for (const name of Object.keys(params)) expect(SEED_INSERT_SQL, name).to.match(new RegExp(`\\{${name}:`));
      for (const name of ['start', 'count', 'now', 'days', 'respondents', 'groups']) expect(SEED_INSERT_SQL).to.match(new RegExp(`\\{${name}:`));
    });
  });
});
