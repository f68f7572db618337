/**
 * UUIDs as the API and the tables take them. UUID_PATTERN is valibot's, the pattern of every
 * schema's v.uuid(), so a check written by hand (a path segment, a cursor, a CLI argument, the
 * fast parser of response records) accepts exactly what a schema accepts.
 */
import * as v from 'valibot';

/** A UUID, any case. */
export const UUID_PATTERN = v.UUID_REGEX;

/** The nil UUID: what a UUID column holds for "none" (a response without scenario, an event without group). */
export const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * Name-based (v5) UUIDs of names that share a prefix, with the prefix hashed once. RFC 9562's v5
 * id is SHA-1 over the namespace's 16 bytes then the name's UTF-8 bytes; SHA-1 takes its input in
 * 64-byte blocks, so the state after the prefix's whole blocks is kept, and an id costs only the
 * blocks of the rest (the events' user ids: `["user","<org id>","` is exactly one block with the
 * namespace, and an alias of up to ~50 bytes one more). SHA-1 here is the FIPS 180-4 algorithm in
 * plain JS: for inputs this short, node:crypto's one-shot `hash` costs more in its binding
 * (objects, a Buffer a digest) than the arithmetic. A unit test holds every id to uuid's v5.
 */
export class V5Prefix {
  private readonly state = new Int32Array(5);
  /** Bytes of the prefix taken in whole blocks (a multiple of 64). */
  private readonly hashed: number;
  /** The prefix's bytes after those blocks (fewer than 64). */
  private readonly tail: Uint8Array;

  constructor(namespace: Uint8Array, prefix: string) {
    const bytes = Buffer.concat([namespace, Buffer.from(prefix, 'utf8')]);
    this.state.set(SHA1_INIT);
    this.hashed = bytes.length - (bytes.length % 64);
    for (let at = 0; at < this.hashed; at += 64) sha1Block(this.state, bytes, at);
    this.tail = Uint8Array.from(bytes.subarray(this.hashed));
  }

  /**
   * The v5 id of prefix + `a` + `b` as 16 bytes written to `out` at `at`; false (nothing written)
   * when the rest is too long for the scratch buffer (the caller hashes it another way).
   */
  idOf(a: string, b: string, out: Uint8Array, at: number): boolean {
    const m = scratch;
    const r = this.tail.length;
    if (r + 3 * (a.length + b.length) + 72 > m.length) return false;
    for (let i = 0; i < r; i++) m[i] = this.tail[i];
    let end = writeUtf8(m, a, r);
    end = writeUtf8(m, b, end);
    const length = this.hashed + end;
    // Padding: 0x80, zeros to 56 mod 64, the message's length in bits (64-bit big endian).
    m[end++] = 0x80;
    while (end % 64 !== 56) m[end++] = 0;
    const bits = length * 8;
    const high = Math.floor(bits / 4294967296);
    writeUint32BE(m, end, high);
    writeUint32BE(m, end + 4, bits >>> 0);
    end += 8;
    const h = work;
    h.set(this.state);
    for (let i = 0; i < end; i += 64) sha1Block(h, m, i);
    for (let i = 0; i < 4; i++) writeUint32BE(out, at + 4 * i, h[i]);
    // RFC 9562 version 5 and variant bits.
    out[at + 6] = (out[at + 6] & 0x0f) | 0x50;
    out[at + 8] = (out[at + 8] & 0x3f) | 0x80;
    return true;
  }
}

const SHA1_INIT = Int32Array.of(0x67452301, 0xefcdab89 | 0, 0x98badcfe | 0, 0x10325476, 0xc3d2e1f0 | 0);
const scratch = Buffer.alloc(16 * 1024);
const work = new Int32Array(5);
const W = new Int32Array(80);

/** `s` as UTF-8 at `at` (ASCII byte by byte, anything else by Buffer's encoder); the end. */
function writeUtf8(m: Buffer, s: string, at: number): number {
  const len = s.length;
  for (let i = 0; i < len; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return at + m.write(s, at, 'utf8');
    m[at + i] = c;
  }
  return at + len;
}

function writeUint32BE(b: Uint8Array, at: number, v: number): void {
  b[at] = v >>> 24;
  b[at + 1] = v >>> 16;
  b[at + 2] = v >>> 8;
  b[at + 3] = v;
}

/** One SHA-1 block (64 bytes of `m` at `at`) into the state `h`. */
function sha1Block(h: Int32Array, m: Uint8Array, at: number): void {
  const w = W;
  for (let t = 0; t < 16; t++) {
    const o = at + 4 * t;
    w[t] = (m[o] << 24) | (m[o + 1] << 16) | (m[o + 2] << 8) | m[o + 3];
  }
  for (let t = 16; t < 80; t++) {
    const x = w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16];
    w[t] = (x << 1) | (x >>> 31);
  }
  let a = h[0];
  let b = h[1];
  let c = h[2];
  let d = h[3];
  let e = h[4];
  for (let t = 0; t < 20; t++) {
    const x = (((a << 5) | (a >>> 27)) + ((b & c) | (~b & d)) + e + 0x5a827999 + w[t]) | 0;
    e = d;
    d = c;
    c = (b << 30) | (b >>> 2);
    b = a;
    a = x;
  }
  for (let t = 20; t < 40; t++) {
    const x = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e + 0x6ed9eba1 + w[t]) | 0;
    e = d;
    d = c;
    c = (b << 30) | (b >>> 2);
    b = a;
    a = x;
  }
  for (let t = 40; t < 60; t++) {
    const x = (((a << 5) | (a >>> 27)) + ((b & c) | (b & d) | (c & d)) + e - 0x70e44324 + w[t]) | 0;
    e = d;
    d = c;
    c = (b << 30) | (b >>> 2);
    b = a;
    a = x;
  }
  for (let t = 60; t < 80; t++) {
    const x = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e - 0x359d3e2a + w[t]) | 0;
    e = d;
    d = c;
    c = (b << 30) | (b >>> 2);
    b = a;
    a = x;
  }
  h[0] = (h[0] + a) | 0;
  h[1] = (h[1] + b) | 0;
  h[2] = (h[2] + c) | 0;
  h[3] = (h[3] + d) | 0;
  h[4] = (h[4] + e) | 0;
}
