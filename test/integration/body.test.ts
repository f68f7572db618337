import { expect } from 'chai';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { MAX_EVENT_BATCH_BYTES } from '../../src/events/limits.ts';
import { GZIP_FREE_BYTES, MAX_GZIP_RATIO, compressedLimit, type BodyReadReport } from '../../src/server/body.ts';
import { startTestService, type TestService } from './harness.ts';

/**
 * Request bodies over HTTP: the bounds of a gzip body (decompressed and on the wire), what a 413
 * and a client abort cost the service, and text that is not UTF-8. The service reports every body
 * it read on the `tallyhouse:body-read` channel once the inflater is closed, with the bytes it
 * read from the socket and the bytes the inflater produced over its whole life: a resource count,
 * not a clock.
 */
describe('request bodies (HTTP)', () => {
  let svc: TestService;
  let token: string;
  let limit: number;
  const reports: BodyReadReport[] = [];
  const waiters: Array<(r: BodyReadReport) => void> = [];
  const onReport = (message: unknown) => {
    const waiter = waiters.shift();
    if (waiter) waiter(message as BodyReadReport);
    else reports.push(message as BodyReadReport);
  };
  /** The next report of a body read (one request at a time in this suite). */
  const nextReport = () => new Promise<BodyReadReport>((resolve) => (reports.length > 0 ? resolve(reports.shift()!) : waiters.push(resolve)));
  const releases = async () =>
    Number((await (await svc.client.query({ query: 'SELECT count() AS c FROM releases', format: 'JSONEachRow' })).json<{ c: string }>())[0].c);
  const gzipHeaders = { 'content-type': 'application/json', 'content-encoding': 'gzip' };

  before(async () => {
    svc = await startTestService();
    token = await svc.token(['releases', 'events']);
    limit = svc.config.bodyLimitBytes;
    subscribe('tallyhouse:body-read', onReport);
  });
  after(async () => {
    unsubscribe('tallyhouse:body-read', onReport);
    await svc.close();
  });
  beforeEach(() => {
    reports.length = 0;
    waiters.length = 0;
  });

  /**
   * Sends a body with `Transfer-Encoding: chunked` (no Content-Length, so only the streaming bounds
   * apply) over a raw socket; resolves with the status and headers of the answer, even when the
   * service closes the connection before the client has sent everything.
   */
  const postChunked = (path: string, headers: Record<string, string>, body: Buffer) =>
    new Promise<{ status: number; headers: Record<string, string> }>((resolve, reject) => {
      const socket = connect(Number(new URL(svc.url).port), '127.0.0.1');
      let head = '';
      socket.on('data', (data) => {
        head += data.toString('latin1');
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        const [statusLine, ...lines] = head.slice(0, end).split('\r\n');
        socket.destroy();
        resolve({
          status: Number(statusLine.split(' ')[1]),
          headers: Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()])),
        });
      });
      socket.on('error', (err) => (head.includes('\r\n\r\n') ? undefined : reject(err)));
      const fields = { ...headers, Authorization: `Bearer ${token}`, 'Transfer-Encoding': 'chunked' };
      socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\n${Object.entries(fields).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`);
      for (let at = 0; at < body.length; at += 64 * 1024) {
        const chunk = body.subarray(at, at + 64 * 1024);
        socket.write(`${chunk.length.toString(16)}\r\n`);
        socket.write(chunk);
        socket.write('\r\n');
      }
      socket.write('0\r\n\r\n');
    });

  it('answers a gzip bomb (1 MB inflating to 1 GiB) with 413 and Connection: close, and stops inflating at the limit', async () => {
    // 990 gzip members of 1 MiB of zeros each (gzip allows members back to back): 1.04 MB that
    // inflates to 990 MiB.
    const member = gzipSync(Buffer.alloc(1 << 20));
    const bomb = Buffer.concat(Array.from({ length: 990 }, () => member));
    expect(bomb.length).to.be.below(compressedLimit(limit));
    const n = await releases();
    const res = await svc.request('POST', '/1.0/release', { token, rawBody: bomb, headers: gzipHeaders });
    expect([res.status, res.body.error.code]).to.deep.equal([413, 'payload_too_large']);
    expect(res.headers.get('connection')).to.equal('close');
    const report = await nextReport();
    expect(report.outcome).to.equal('too_large');
    // Inflated: the limit and at most one more output chunk (16 KiB), never the remaining GiB.
    expect(report.inflatedBytes).to.be.within(limit, limit + 64 * 1024);
    // Read from the socket: what produced that, far from the whole body.
    expect(report.wireBytes).to.be.below(bomb.length / 4);
    expect(await releases()).to.equal(n);
  });

  it('answers a gzip bomb under a large limit (256 MiB on POST /1.0/event, 45 MB allowed) with 413 long before the limit: the inflating is bounded per compressed byte', async () => {
    const member = gzipSync(Buffer.alloc(1 << 20), { level: 9 });
    const bomb = Buffer.concat(Array.from({ length: 256 }, () => member));
    const eventLimit = Math.max(limit, MAX_EVENT_BATCH_BYTES);
    const ratio = (256 << 20) / bomb.length;
    expect(ratio).to.be.above(900);
    const res = await svc.request('POST', '/1.0/event', { token, rawBody: bomb, headers: gzipHeaders });
    expect([res.status, res.body.error.code]).to.deep.equal([413, 'payload_too_large']);
    expect(res.body.error.message).to.match(/inflates more than \d+ times its compressed size/);
    expect(res.headers.get('connection')).to.equal('close');
    const report = await nextReport();
    expect(report.outcome).to.equal('too_large');
    // Inflated: where GZIP_FREE_BYTES + MAX_GZIP_RATIO x consumed falls behind the body's ratio,
    // and at most one more output chunk; a fifth of the route's limit.
    expect(report.inflatedBytes).to.be.at.most(GZIP_FREE_BYTES / (1 - MAX_GZIP_RATIO / ratio) + 64 * 1024);
    expect(report.inflatedBytes).to.be.below(eventLimit / 5);
    expect(report.wireBytes).to.be.below(bomb.length / 4);
  });

  it('takes valid JSON over the gzip bound when it is sent uncompressed', async () => {
    // (The contract's batches with the highest ratios are taken gzipped: event-limits.test.ts.)
    const name = `ratio-${Date.now()}`;
    const stored = async () =>
      Number((await (await svc.client.query({ query: 'SELECT count() AS c FROM events WHERE event_name = {n:String}', query_params: { n: name }, format: 'JSONEachRow' })).json<{ c: string }>())[0].c);
    // Padded with 16 MiB of spaces: over 1000:1 gzipped, refused before it is inflated whole.
    const padded = Buffer.from(`[${' '.repeat(16 << 20)}{"type":"track","event_name":"${name}"}]`);
    const refused = await svc.request('POST', '/1.0/event', { token, rawBody: gzipSync(padded), headers: gzipHeaders });
    expect([refused.status, refused.body.error.code]).to.deep.equal([413, 'payload_too_large']);
    expect((await nextReport()).inflatedBytes).to.be.below(padded.length / 2);
    const plain = await svc.request('POST', '/1.0/event', { token, rawBody: padded, headers: { 'content-type': 'application/json' } });
    expect([plain.status, plain.body.count]).to.deep.equal([200, 1]);
    await svc.settle();
    expect(await stored()).to.equal(1);
  });

  it('bounds the gzip body on the wire too: a header field of 2 MiB that inflates to nothing is a 413', async () => {
    // gzip header with FNAME (flag 0x08): a zero-terminated name of any length, not part of the output.
    const deflated = gzipSync(Buffer.from('{"name":"x","version":"1"}'));
    const header = Buffer.from([0x1f, 0x8b, 0x08, 0x08, 0, 0, 0, 0, 0, 0xff]);
    const name = Buffer.concat([Buffer.alloc(2 << 20, 0x61), Buffer.from([0])]);
    const padded = Buffer.concat([header, name, deflated.subarray(10)]);
    const res = await postChunked('/1.0/release', gzipHeaders, padded);
    expect([res.status, res.headers.connection]).to.deep.equal([413, 'close']);
    const report = await nextReport();
    expect(report.outcome).to.equal('too_large');
    expect(report.inflatedBytes).to.equal(0);
    expect(report.wireBytes).to.be.at.most(compressedLimit(limit) + 64 * 1024);
    // The same body with a short name is fine: the bound is on the padding, not on gzip headers.
    const ok = Buffer.concat([header, Buffer.from('name.json\0'), deflated.subarray(10)]);
    const created = await svc.request('POST', '/1.0/release', { token, rawBody: ok, headers: gzipHeaders });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    expect((await nextReport()).outcome).to.equal('ok');
  });

  it('refuses a declared Content-Length over the limit before reading it', async () => {
    const res = await svc.request('POST', '/1.0/release', {
      token,
      rawBody: JSON.stringify({ name: 'x', version: '1', description: 'd'.repeat(limit) }),
      headers: { 'content-type': 'application/json' },
    });
    expect([res.status, res.headers.get('connection')]).to.deep.equal([413, 'close']);
  });

  it('stops reading and inflating when the client goes away mid-body, and stores nothing', async () => {
    const body = gzipSync(JSON.stringify({ name: 'aborted', version: '1', description: 'x'.repeat(100_000) }), { level: 0 });
    const n = await releases();
    const socket = connect(Number(new URL(svc.url).port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(
      `POST /1.0/release HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
        `Content-Encoding: gzip\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    await new Promise<void>((resolve) => socket.write(body.subarray(0, body.length >> 1), () => resolve()));
    socket.destroy();
    const report = await nextReport();
    expect(report.outcome).to.equal('aborted');
    expect(report.wireBytes).to.be.below(body.length);
    expect(await releases()).to.equal(n);
  });

  it('refuses a body that is not UTF-8 with 400 invalid_json, plain and gzip, storing nothing', async () => {
    const n = await releases();
    const bad = [
      Buffer.concat([Buffer.from('{"name":"caf'), Buffer.from([0xe9]), Buffer.from('","version":"1"}')]), // Latin-1 é
      Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('","version":"1"}')]), // an encoded surrogate
      Buffer.concat([Buffer.from('{"name":"x","version":"'), Buffer.from([0xf0, 0x9f, 0x98]), Buffer.from('"}')]), // a truncated emoji
    ];
    for (const raw of bad) {
      for (const [rawBody, headers] of [
        [raw, { 'content-type': 'application/json' }],
        [gzipSync(raw), gzipHeaders],
      ] as const) {
        const res = await svc.request('POST', '/1.0/release', { token, rawBody, headers });
        expect([res.status, res.body.error.code], raw.toString('hex')).to.deep.equal([400, 'invalid_json']);
        expect(res.body.error.message).to.match(/not valid UTF-8 .*offset \d+/);
      }
    }
    const events = await svc.request('POST', '/1.0/event', {
      token,
      rawBody: Buffer.concat([Buffer.from('[{"type":"track","event_name":"'), Buffer.from([0xff]), Buffer.from('"}]')]),
      headers: { 'content-type': 'application/json' },
    });
    expect([events.status, events.body.error.code]).to.deep.equal([400, 'invalid_json']);
    expect(await releases()).to.equal(n);
    // Valid UTF-8 beyond ASCII still passes.
    const ok = await svc.request('POST', '/1.0/release', { token, rawBody: Buffer.from('{"name":"café 😀","version":"1"}'), headers: { 'content-type': 'application/json' } });
    expect([ok.status, ok.body.name]).to.deep.equal([201, 'café 😀']);
  });
});
