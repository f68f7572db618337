import { ClickHouseError } from '@clickhouse/client';
import { expect } from 'chai';
import { clickHouseError, insertDataError } from '../../src/clickhouse/errors.ts';
import { toHttpAnswer } from '../../src/server/errors.ts';

const engineError = (code: string, type: string) => new ClickHouseError({ message: `${type} happened`, code, type });

describe('ClickHouse errors -> HTTP errors', () => {
  describe('clickHouseError (queries)', () => {
    const cases: Array<[string, unknown, number | undefined, string | undefined]> = [
      ['TOO_MANY_ROWS', engineError('158', 'TOO_MANY_ROWS'), 400, 'query_too_expensive'],
      ['MEMORY_LIMIT_EXCEEDED', engineError('241', 'MEMORY_LIMIT_EXCEEDED'), 400, 'query_too_expensive'],
      ['TOO_MANY_BYTES', engineError('307', 'TOO_MANY_BYTES'), 400, 'query_too_expensive'],
      ['TOO_MANY_ROWS_OR_BYTES', engineError('396', 'TOO_MANY_ROWS_OR_BYTES'), 400, 'query_too_expensive'],
      ['TIMEOUT_EXCEEDED', engineError('159', 'TIMEOUT_EXCEEDED'), 503, 'unavailable'],
      ['TOO_MANY_SIMULTANEOUS_QUERIES', engineError('202', 'TOO_MANY_SIMULTANEOUS_QUERIES'), 503, 'unavailable'],
      ['NOT_ENOUGH_SPACE (the engine disk is full)', engineError('243', 'NOT_ENOUGH_SPACE'), 503, 'unavailable'],
      ['connection refused', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }), 503, 'unavailable'],
      ['socket hang up', new Error('socket hang up'), 503, 'unavailable'],
      ['a syntax error (a bug: 500)', engineError('62', 'SYNTAX_ERROR'), undefined, undefined],
      ['anything else (a bug: 500)', new TypeError('x is undefined'), undefined, undefined],
    ];
    for (const [name, err, status, code] of cases) {
      it(`${name} -> ${status ?? 'none (500)'}`, () => {
        const mapped = clickHouseError(err);
        const answer = mapped && toHttpAnswer(mapped);
        expect(answer?.status).to.equal(status);
        expect(mapped?.code).to.equal(code);
        if (status === 503) expect(answer!.headers['Retry-After']).to.match(/^\d+$/);
      });
    }
  });

  describe('insertDataError (event INSERTs)', () => {
    for (const type of ['CANNOT_PARSE_ESCAPE_SEQUENCE', 'CANNOT_PARSE_INPUT_ASSERTION_FAILED', 'INCORRECT_DATA', 'TOO_LARGE_STRING_SIZE']) {
      it(`${type}: the rows are at fault -> 400 naming it`, () => {
        const mapped = insertDataError(engineError('27', type));
        expect(mapped).to.include({ kind: 'invalid', code: 'validation_error' });
        expect(mapped!.message).to.include(type);
      });
    }
    // Not parse errors: the store's problem (and a view failing after the part was written must never be retried in halves).
    for (const type of ['CANNOT_READ_FROM_SOCKET', 'CANNOT_READ_ALL_DATA', 'TYPE_MISMATCH', 'UNKNOWN_FIELD', 'MEMORY_LIMIT_EXCEEDED', 'TIMEOUT_EXCEEDED']) {
      it(`${type}: not the rows' fault -> none (503)`, () => {
        expect(insertDataError(engineError('1', type))).to.equal(undefined);
      });
    }
    it('a network error -> none (503)', () => {
      expect(insertDataError(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))).to.equal(undefined);
    });
  });
});
