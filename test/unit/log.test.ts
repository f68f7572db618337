import { expect } from 'chai';
import { Writable } from 'node:stream';
import { createLogger, requestContext } from '../../src/log.ts';

/** A destination that keeps the lines pino writes. */
function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, stream };
}

describe('log (pino)', () => {
  it('writes one JSON line per entry with level, ISO time and the entry; below the level nothing', () => {
    const { lines, stream } = capture();
    const log = createLogger('info', stream);
    log.debug({ msg: 'hidden' });
    log.info({ msg: 'shown', n: 1 });
    log.error({ msg: 'bad', error: 'x' });
    expect(lines.map((l) => [l.level, l.msg])).to.deep.equal([['info', 'shown'], ['error', 'bad']]);
    expect(lines[0].n).to.equal(1);
    expect(lines[0].time).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('silent writes nothing', () => {
    const { lines, stream } = capture();
    const log = createLogger('silent', stream);
    log.error({ msg: 'nothing' });
    expect(lines).to.deep.equal([]);
  });

  it('a line written while serving a request carries its request_id, across awaits', async () => {
    const { lines, stream } = capture();
    const log = createLogger('debug', stream);
    await requestContext.run({ requestId: 'req-1' }, async () => {
      await new Promise((r) => setTimeout(r, 1));
      log.error({ msg: 'failed inside' });
    });
    log.info({ msg: 'outside' });
    expect(lines[0]).to.include({ msg: 'failed inside', request_id: 'req-1' });
    expect(lines[1]).to.not.have.property('request_id');
  });
});
