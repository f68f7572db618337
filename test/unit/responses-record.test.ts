import { expect } from 'chai';
import { DomainError } from '../../src/errors.ts';
import { answerText, parseResponseBatch, toResponseRow } from '../../src/responses/record.ts';
import { rebuildRecord, type StoredColumns } from '../../src/responses/stored-doc.ts';
import { dbToApi, formatApi, formatDb, parseIsoMicros } from '../../src/time/iso.ts';

const ORG = '0f0f0f0f-0000-4000-8000-000000000001';
const OTHER_ORG = '0f0f0f0f-0000-4000-8000-000000000002';

/** A complete record in the canonical form (reads back identical). */
function record(overrides: Record<string, unknown> = {}): Record<string, any> {
  return {
    id: '33333333-3333-4333-8333-000000000001',
    doc_type: 'response',
    org_id: ORG,
    channel_id: '44444444-4444-4444-8444-444444444444',
    respondent_id: '55555555-5555-4555-8555-555555555555',
    respondent_aliases: ['55555555-5555-4555-8555-555555555555', 'Customer-42'],
    survey_id: '22222222-2222-4222-8222-222222222222',
    scenario_id: '66666666-6666-4666-8666-666666666666',
    language: 'fr',
    locale: 'fr-FR',
    question_id_path: 'q1/q2',
    question_correlation_id_path: 'c1/c2',
    action_id_path: 'a1',
    action_correlation_id_path: 'ac1',
    group_ids: ['77777777-7777-4777-8777-777777777777'],
    hidden_fields: [
      { key: 'os', t: 0, v_s: 'Linux' },
      { key: 'logged_in', t: 1, v_b: true },
      { key: 'age', t: 2, v_d: 42.5 },
    ],
    emotions: { fear: null, sadness: 0.1, anger: 0, joy: 0.9 },
    answers: [
      {
        t: 2, v_d: 9, v_s: '9', cta_type: 'nps', key: 'nps',
        question_id: '88888888-8888-4888-8888-888888888881', question_correlation_id: '99999999-9999-4999-8999-999999999991',
        action_id: '88888888-8888-4888-8888-888888888882', action_correlation_id: '99999999-9999-4999-8999-999999999992',
        answer_id: null, tags: null, lang: null, translations: [], time: '2024-01-02T03:04:05.123456Z',
      },
      {
        t: 0, v_s: 'Great PRODUCT', cta_type: 'open_question', key: 'why',
        question_id: '88888888-8888-4888-8888-888888888883', question_correlation_id: '99999999-9999-4999-8999-999999999993',
        tags: ['praise'], lang: 'en', translations: [{ lang: 'fr', v_s: 'Super Produit' }, 'Tolles Produkt'], time: '2024-01-02T03:04:06.000001Z',
      },
      { t: 0, v_s: '4', cta_type: 'csat', question_id: '88888888-8888-4888-8888-888888888884', question_correlation_id: '99999999-9999-4999-8999-999999999994' },
      { t: 1, v_b: false, cta_type: 'yes_no', question_id: '88888888-8888-4888-8888-888888888885', question_correlation_id: '99999999-9999-4999-8999-999999999995' },
    ],
    completion: 'fully_completed',
    active: false,
    end_reason: 'completed',
    ended_at: '2024-01-02T03:04:07.000000Z',
    created_at: '2024-01-02T03:04:05.000001Z',
    updated_at: '2024-01-02T03:04:07.999999Z',
    last_answer_at: '2024-01-02T03:04:06.000001Z',
    ...overrides,
  };
}

function issuesOf(body: unknown, org = ORG) {
  try {
    parseResponseBatch(body, org);
  } catch (e) {
    expect(e).to.be.instanceOf(DomainError);
    expect((e as DomainError).kind).to.equal('invalid');
    return (e as DomainError).issues!;
  }
  throw new Error('expected a 400');
}

describe('responses: record schema', () => {
  it('a complete canonical record parses to itself (read back field for field)', () => {
    const input = record();
    expect(parseResponseBatch([input], ORG)).to.deep.equal([input]);
  });

  it('only the required fields are needed', () => {
    const minimal = {
      id: record().id, channel_id: record().channel_id, respondent_id: record().respondent_id, survey_id: record().survey_id,
      completion: 'not_started', active: true, created_at: '2024-01-01T00:00:00.000000Z', updated_at: '2024-01-01T00:00:00.000000Z',
    };
    expect(parseResponseBatch([minimal], ORG)).to.deep.equal([minimal]);
  });

  it('active responses carry "" for end_reason and ended_at', () => {
    expect(parseResponseBatch([record({ active: true, end_reason: '', ended_at: '' })], ORG)[0]).to.include({ end_reason: '', ended_at: '' });
  });

  const bad: Array<[string, unknown, string]> = [
    ['id not a UUID', record({ id: 'abc' }), '[0].id'],
    ['survey_id missing', record({ survey_id: undefined }), '[0].survey_id'],
    ['channel_id not a UUID', record({ channel_id: 5 }), '[0].channel_id'],
    ['group id not a UUID', record({ group_ids: ['x'] }), '[0].group_ids[0]'],
    ['doc_type other', record({ doc_type: 'event' }), '[0].doc_type'],
    ['completion unknown', record({ completion: 'done' }), '[0].completion'],
    ['active not boolean', record({ active: 'yes' }), '[0].active'],
    ['end_reason while active', record({ active: true, ended_at: '' }), '[0].end_reason'],
    ['ended_at while active', record({ active: true, end_reason: '' }), '[0].ended_at'],
    ['created_at not ISO', record({ created_at: '02/01/2024' }), '[0].created_at'],
    ['created_at Feb 30', record({ created_at: '2024-02-30T00:00:00Z' }), '[0].created_at'],
    ['updated_at hour 24', record({ updated_at: '2024-01-01T24:00:00Z' }), '[0].updated_at'],
    ['updated_at year 1800', record({ updated_at: '1800-01-01T00:00:00Z' }), '[0].updated_at'],
    ['last_answer_at a number', record({ last_answer_at: 5 }), '[0].last_answer_at'],
    ['hidden t 0 without v_s', record({ hidden_fields: [{ key: 'os', t: 0, v_b: true }] }), '[0].hidden_fields[0].t'],
    ['hidden t 1 with v_s beside v_b', record({ hidden_fields: [{ key: 'x', t: 1, v_b: true, v_s: 'true' }] }), '[0].hidden_fields[0].t'],
    ['hidden t 2 with a string', record({ hidden_fields: [{ key: 'x', t: 2, v_d: '5' }] }), '[0].hidden_fields[0].v_d'],
    ['hidden t 3', record({ hidden_fields: [{ key: 'x', t: 3, v_s: 'a' }] }), '[0].hidden_fields[0].t'],
    ['hidden key missing', record({ hidden_fields: [{ t: 0, v_s: 'a' }] }), '[0].hidden_fields[0].key'],
    ['answer t 2 without v_d', record({ answers: [{ ...record().answers[0], v_d: undefined }] }), '[0].answers[0].t'],
    ['answer t 0 with v_d', record({ answers: [{ ...record().answers[1], v_d: 3 }] }), '[0].answers[0].t'],
    ['answer t 1 with v_d', record({ answers: [{ ...record().answers[3], v_d: 3 }] }), '[0].answers[0].t'],
    ['answer v_d infinite-ish', record({ answers: [{ ...record().answers[0], v_d: 'NaN' }] }), '[0].answers[0].v_d'],
    ['answer question_id not a UUID', record({ answers: [{ ...record().answers[0], question_id: 'q1' }] }), '[0].answers[0].question_id'],
    ['answer time bad', record({ answers: [{ ...record().answers[0], time: 'now' }] }), '[0].answers[0].time'],
    ['answer translations not an array', record({ answers: [{ ...record().answers[0], translations: 'x' }] }), '[0].answers[0].translations'],
    ['emotions not an object', record({ emotions: 'happy' }), '[0].emotions'],
    ['emotion not a number', record({ emotions: { joy: 'lots' } }), '[0].emotions.joy'],
  ];
  for (const [name, rec, path] of bad) {
    it(`${name} -> 400 at ${path}`, () => {
      expect(issuesOf([record(), rec]).map((i) => i.path)).to.include(path.replace('[0]', '[1]'));
    });
  }

  it('names every bad record by index and field, the t problem even beside other errors', () => {
    const issues = issuesOf([record({ id: 'x' }), record(), record({ answers: [{ t: 1, cta_type: 'x', question_id: 'nope' }] }), 7]);
    const paths = issues.map((i) => i.path);
    expect(paths).to.include.members(['[0].id', '[2].answers[0].t', '[2].answers[0].question_id', '[2].answers[0].question_correlation_id', '[3]']);
    expect(issues.find((i) => i.path === '[2].answers[0].question_correlation_id')!.message).to.equal('question_correlation_id is required');
  });

  it('a record naming another organization is a 400 at its org_id', () => {
    expect(issuesOf([record(), record({ org_id: OTHER_ORG })])).to.deep.equal([
      { path: '[1].org_id', message: "org_id names another organization than the token's; omit it or use the token's organization" },
    ]);
  });

  it('org_id of the token in another case is accepted', () => {
    expect(() => parseResponseBatch([record({ org_id: ORG.toUpperCase() })], ORG)).not.to.throw();
  });

  it('batch of 0 or 1001 records, or not an array -> 400', () => {
    expect(issuesOf([])[0].path).to.equal('');
    expect(issuesOf(Array.from({ length: 1001 }, () => record()))[0].message).to.match(/at most 1000/);
    expect(issuesOf({ a: 1 })[0].path).to.equal('');
  });

  it('drops unknown fields', () => {
    const [out] = parseResponseBatch([record({ extra: 1 })], ORG);
    expect(out).not.to.have.property('extra');
  });
});

describe('responses: timestamps', () => {
  const cases: Array<[string, string]> = [
    ['2024-01-02T03:04:05.123456Z', '2024-01-02 03:04:05.123456'],
    ['2024-01-02T03:04:05.999999Z', '2024-01-02 03:04:05.999999'],
    ['2024-01-02T03:04:05.1Z', '2024-01-02 03:04:05.100000'],
    ['2024-01-02T03:04:05.123456789Z', '2024-01-02 03:04:05.123456'],
    ['2024-01-02T03:04:05Z', '2024-01-02 03:04:05.000000'],
    ['2024-01-02T00:30:00.000001+01:00', '2024-01-01 23:30:00.000001'],
    ['2023-12-31T23:59:59.999999-00:30', '2024-01-01 00:29:59.999999'],
    ['2024-01-02 03:04:05.5', '2024-01-02 03:04:05.500000'],
    ['2024-02-29', '2024-02-29 00:00:00.000000'],
    ['2024-01-02T03:04+0530', '2024-01-01 21:34:00.000000'],
  ];
  for (const [input, db] of cases) {
    it(`${input} -> ${db}`, () => {
      const t = parseIsoMicros(input)!;
      expect(formatDb(t)).to.equal(db);
      expect(formatApi(t)).to.equal(`${db.replace(' ', 'T')}Z`);
      expect(dbToApi(db)).to.equal(formatApi(t));
    });
  }
  for (const bad of ['2023-02-29', '2024-13-01', '2024-01-01T25:00:00Z', '2024-01-01T00:60:00Z', '2024-01-01T00:00:60Z', '1899-12-31T23:59:59Z', '2300-01-01', '2024-01-01T00:00:00+25:00', 'x', '2024-1-1', '']) {
    it(`rejects ${JSON.stringify(bad)}`, () => expect(parseIsoMicros(bad)).to.equal(undefined));
  }
});

describe('responses: row mapping', () => {
  const [parsed] = parseResponseBatch([record({ org_id: undefined })], ORG);
  const row = toResponseRow(parsed, ORG);

  it('keeps microseconds exactly in the DateTime64(6) columns', () => {
    expect(row).to.include({ created_at: '2024-01-02 03:04:05.000001', updated_at: '2024-01-02 03:04:07.999999', ended_at: '2024-01-02 03:04:07.000000', last_answer_at: '2024-01-02 03:04:06.000001' });
  });

  it('maps the typed columns', () => {
    expect(row).to.deep.include({
      org_id: ORG, survey_id: record().survey_id, id: record().id, channel_id: record().channel_id,
      respondent_id: record().respondent_id, respondent_aliases: record().respondent_aliases, scenario_id: record().scenario_id,
      language: 'fr', locale: 'fr-FR', group_ids: record().group_ids, completion: 'fully_completed', active: false, end_reason: 'completed',
      hf_keys: ['os', 'logged_in', 'age'], hf_types: [0, 1, 2], hf_strings: ['Linux', '', ''], hf_bools: [false, true, false], hf_numbers: [0, 0, 42.5],
      ans_question_ids: ['99999999-9999-4999-8999-999999999991', '99999999-9999-4999-8999-999999999993', '99999999-9999-4999-8999-999999999994', '99999999-9999-4999-8999-999999999995'],
      ans_cta_types: ['nps', 'open_question', 'csat', 'yes_no'],
      ans_values: ['9', 'Great PRODUCT', '4', 'false'],
      ans_scores: [9, null, 4, null],
    });
  });

  it('answer_text: answer and translation texts, lower-cased, one per line', () => {
    expect(row.answer_text).to.equal('9\ngreat product\nsuper produit\ntolles produkt\n4');
    expect(answerText([])).to.equal('');
  });

  it('doc and the columns give back the record with the token org (stored-doc.ts)', () => {
    expect(rebuildRecord(row as unknown as StoredColumns)).to.deep.equal({ ...record(), org_id: ORG });
  });

  it('defaults for absent optional fields; "" and null timestamps are NULL', () => {
    const [min] = parseResponseBatch([{
      id: record().id, channel_id: record().channel_id, respondent_id: record().respondent_id, survey_id: record().survey_id,
      completion: 'not_started', active: true, end_reason: '', ended_at: '', last_answer_at: null,
      created_at: '2024-01-01T00:00:00Z', updated_at: '2024-01-01T00:00:00Z',
    }], ORG);
    const r = toResponseRow(min, ORG);
    expect(r).to.deep.include({
      scenario_id: '00000000-0000-0000-0000-000000000000', language: '', respondent_aliases: [], group_ids: [], hf_keys: [], ans_scores: [],
      answer_text: '', ended_at: null, last_answer_at: null, end_reason: '',
    });
    expect(rebuildRecord(r as unknown as StoredColumns)).to.deep.equal({ ...min, org_id: ORG });
    expect(rebuildRecord(r as unknown as StoredColumns).created_at).to.equal('2024-01-01T00:00:00.000000Z');
  });

  it('scores: v_d first, then v_s read as a number', () => {
    const base = record().answers[0];
    const [p] = parseResponseBatch([record({
      answers: [
        { ...base, t: 0, v_d: undefined, v_s: ' 7 ' },
        { ...base, t: 0, v_d: undefined, v_s: '7a' },
        { ...base, t: 2, v_d: 3, v_s: '8' },
        { ...base, t: 0, v_d: undefined, v_s: '' },
      ],
    })], ORG);
    expect(toResponseRow(p, ORG).ans_scores).to.deep.equal([7, null, 3, null]);
  });
});
