import { expect } from 'chai';
import fc from 'fast-check';
import { parse as parseUuid } from 'uuid';
import { forEachFixedRow, RowBinaryReader, RowBinaryWriter } from '../../src/clickhouse/rowbinary.ts';

describe('RowBinary writer (the event write path\'s operations)', () => {
  it('writes any text once with its UTF-8 length, whatever the length prefix turns out to need (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.string({ unit: 'grapheme', minLength: 40, maxLength: 6000 })), { maxLength: 6 }), (texts) => {
        const w = new RowBinaryWriter(16);
        const lengths = texts.map((t) => w.string(t));
        expect(lengths).to.deep.equal(texts.map((t) => Buffer.byteLength(t)));
        const r = new RowBinaryReader(w.copyOut());
        expect(texts.map(() => r.string())).to.deep.equal(texts.map((t) => Buffer.from(t).toString()));
        expect(r.done).to.equal(true);
      }),
    );
  });

  it('writes quotes, newlines, NUL and the JSON escapes as plain bytes', () => {
    const text = 'Signed "up"\n\u0000</script>\u2028é😀';
    const w = new RowBinaryWriter();
    w.string(text);
    expect(w.finish()).to.deep.equal(Buffer.concat([Buffer.from([Buffer.byteLength(text)]), Buffer.from(text)]));
  });

  it('writes UUIDs as two little-endian halves, integers little endian, milliseconds as Int64', () => {
    const w = new RowBinaryWriter();
    w.uuidBytes(parseUuid('00112233-4455-6677-8899-aabbccddeeff'));
    w.uuid('00112233-4455-6677-8899-aabbccddeeff');
    w.uint16(0x0102);
    w.dateTime64ms(-1);
    w.dateTime64ms(Date.UTC(2026, 10, 22));
    const out = w.finish();
    expect(out.subarray(0, 16).toString('hex')).to.equal('7766554433221100ffeeddccbbaa9988');
    expect(out.subarray(16, 32)).to.deep.equal(out.subarray(0, 16));
    const r = new RowBinaryReader(out);
    expect([r.uuid(), r.uuid(), r.uint16(), r.int64(), r.int64()]).to.deep.equal(['00112233-4455-6677-8899-aabbccddeeff', '00112233-4455-6677-8899-aabbccddeeff', 0x0102, -1n, BigInt(Date.UTC(2026, 10, 22))]);
  });
  it('writes a tagged String as the String of the tag character then the text (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom('s', 'n', 'o'), fc.oneof(fc.string({ unit: 'binary', maxLength: 200 }), fc.string({ unit: 'grapheme', minLength: 40, maxLength: 3000 }))), { maxLength: 6 }), (pairs) => {
        const tagged = new RowBinaryWriter(16);
        const plain = new RowBinaryWriter(16);
        for (const [tag, text] of pairs) {
          expect(tagged.taggedString(tag.charCodeAt(0), text)).to.equal(Buffer.byteLength(text));
          plain.string(tag + text);
        }
        expect(tagged.finish()).to.deep.equal(plain.finish());
      }),
    );
  });

  it('hands out pieces that later writes never touch, across slabs and growth (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.array(fc.string({ maxLength: 400 }), { maxLength: 8 }), fc.boolean()), { maxLength: 30 }), fc.integer({ min: 16, max: 2048 }), (pieces, capacity) => {
        const w = new RowBinaryWriter(capacity);
        const kept: { piece: Buffer; copy: Buffer; texts: string[] }[] = [];
        for (const [texts, keep] of pieces) {
          w.reset();
          for (const t of texts) w.string(t);
          w.zeros(3);
          w.bytes(Buffer.from([1, 2, 3]));
          if (!keep) continue;
          expect(w.length).to.equal(w.finish().length);
          const piece = w.take();
          kept.push({ piece, copy: Buffer.from(piece), texts });
        }
        for (const { piece, copy, texts } of kept) {
          expect(piece).to.deep.equal(copy);
          const r = new RowBinaryReader(piece);
          expect(texts.map(() => r.string())).to.deep.equal(texts.map((t) => Buffer.from(t).toString()));
          expect([...r.bytes(6)]).to.deep.equal([0, 0, 0, 1, 2, 3]);
          expect(r.done).to.equal(true);
        }
      }),
    );
  });
});

describe('forEachFixedRow (streamed RowBinary answers of fixed-width rows)', () => {
  it('reads every row once, in order, wherever the stream cuts it (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 0, max: 60 }), fc.array(fc.integer({ min: 1, max: 97 }), { minLength: 1, maxLength: 20 }), async (width, rows, cuts) => {
        const body = Buffer.alloc(width * rows);
        for (let i = 0; i < body.length; i++) body[i] = (i * 7 + 3) & 0xff;
        const pieces: Buffer[] = [];
        for (let at = 0, i = 0; at < body.length; i++) {
          const end = Math.min(body.length, at + cuts[i % cuts.length]);
          pieces.push(body.subarray(at, end));
          at = end;
        }
        const seen: string[] = [];
        await forEachFixedRow((async function* () { yield* pieces; })(), width, (buf, at) => seen.push(buf.toString('hex', at, at + width)));
        expect(seen).to.deep.equal(Array.from({ length: rows }, (_, r) => body.toString('hex', r * width, (r + 1) * width)));
      }),
    );
  });
});
