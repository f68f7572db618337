import { expect } from 'chai';
import fc from 'fast-check';
import { hash, randomUUID } from 'node:crypto';
import { md5Into, Md5Prefix } from '../../src/events/md5.ts';

const reference = (text: string) => hash('md5', text, 'buffer');

describe('md5Into (the message keys of encode.ts)', () => {
  it("is node:crypto's MD5 of prefix + text at every length around the block boundaries", () => {
    const prefix = new Md5Prefix(`${randomUUID()}:`);
    const out = Buffer.alloc(48);
    for (let n = 0; n < 200; n++) {
      const text = 'x'.repeat(n);
      md5Into(prefix, text, out, 16);
      expect(out.subarray(16, 32).equals(reference(`${new TextDecoder().decode(prefix.bytes)}${text}`)), `length ${n}`).to.equal(true);
    }
  });

  it('is MD5 of the UTF-8 text for any prefix and text (non-ASCII, surrogate pairs, long)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 80 }), fc.string({ unit: 'binary', maxLength: 300 }), fc.nat(64), (p, text, at) => {
        const out = Buffer.alloc(96);
        md5Into(new Md5Prefix(p), text, out, at);
        expect(out.subarray(at, at + 16).equals(reference(p + text))).to.equal(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps the prefix of each call apart (interleaved prefixes, and a message buffer that grows)', () => {
    const a = new Md5Prefix('a:');
    const b = new Md5Prefix('bb:');
    const out = Buffer.alloc(16);
    for (const [p, s, text] of [[a, 'a:', 'm1'], [b, 'bb:', 'm2'], [a, 'a:', 'y'.repeat(5000)], [b, 'bb:', 'z'], [a, 'a:', 'm3']] as const) {
      md5Into(p, text, out, 0);
      expect(out.equals(reference(s + text))).to.equal(true);
    }
  });
});
