/**
 * MD5 of `prefix + text` (UTF-8), written as 16 bytes into a buffer: the message keys of one
 * request (encode.ts), whose prefix (`org_id:`) is the same for every key. The prefix's UTF-8
 * bytes are laid out once per request (`Md5Prefix`), and each key then costs its own text and the
 * compression rounds: no string concatenation, no array per digest (js-md5's `md5.array` built
 * both for every key, ~0.5 µs a key on this machine). RFC 1321; test/unit/md5.test.ts holds it to
 * node:crypto's MD5 on every length around the block boundaries and on any Unicode text.
 */

const ENCODER = new TextEncoder();

/** The prefix's bytes, once, for every key of a request. */
export class Md5Prefix {
  readonly bytes: Uint8Array;
  constructor(prefix: string) {
    this.bytes = ENCODER.encode(prefix);
  }
}

/** The message being hashed: grown as needed, reused by every call (the walk never awaits). */
let message = new Uint8Array(256);
/** The prefix `message` starts with (laid out once for all the keys of a request). */
let placed: Md5Prefix | undefined;
const state = new Int32Array(4);

/** Writes MD5(prefix + text) at `out[at..at+16]`. */
export function md5Into(prefix: Md5Prefix, text: string, out: Uint8Array, at: number): void {
  const p = prefix.bytes;
  // At most 3 UTF-8 bytes per UTF-16 unit, plus the padding (1 byte, up to 63 zeros, 8 of length).
  const need = p.length + 3 * text.length + 72;
  if (message.length < need) {
    message = new Uint8Array(Math.max(need, 2 * message.length));
    placed = undefined;
  }
  const m = message;
  if (placed !== prefix) {
    m.set(p, 0);
    placed = prefix;
  }
  let n = p.length;
  let ascii = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80) {
      ascii = false;
      break;
    }
    m[n++] = c;
  }
  if (!ascii) n = p.length + ENCODER.encodeInto(text, m.subarray(p.length)).written!;
  const bits = n * 8;
  m[n] = 0x80;
  let end = n + 1;
  while (end % 64 !== 56) m[end++] = 0;
  // The length in bits, little-endian over 8 bytes (a key is far below 2^32 bits).
  m[end] = bits & 0xff;
  m[end + 1] = (bits >>> 8) & 0xff;
  m[end + 2] = (bits >>> 16) & 0xff;
  m[end + 3] = (bits >>> 24) & 0xff;
  m[end + 4] = 0;
  m[end + 5] = 0;
  m[end + 6] = 0;
  m[end + 7] = 0;
  end += 8;

  let h0 = 0x67452301;
  let h1 = 0xefcdab89 | 0;
  let h2 = 0x98badcfe | 0;
  let h3 = 0x10325476;
  for (let block = 0; block < end; block += 64) {
    const w0 = word(m, block), w1 = word(m, block + 4), w2 = word(m, block + 8), w3 = word(m, block + 12);
    const w4 = word(m, block + 16), w5 = word(m, block + 20), w6 = word(m, block + 24), w7 = word(m, block + 28);
    const w8 = word(m, block + 32), w9 = word(m, block + 36), w10 = word(m, block + 40), w11 = word(m, block + 44);
    const w12 = word(m, block + 48), w13 = word(m, block + 52), w14 = word(m, block + 56), w15 = word(m, block + 60);
    let a = h0;
    let b = h1;
    let c = h2;
    let d = h3;
    let x: number;
    x = (a + ((b & c) | (~b & d)) + (0xd76aa478 | 0) + w0) | 0;
    a = (b + ((x << 7) | (x >>> 25))) | 0;
    x = (d + ((a & b) | (~a & c)) + (0xe8c7b756 | 0) + w1) | 0;
    d = (a + ((x << 12) | (x >>> 20))) | 0;
    x = (c + ((d & a) | (~d & b)) + (0x242070db) + w2) | 0;
    c = (d + ((x << 17) | (x >>> 15))) | 0;
    x = (b + ((c & d) | (~c & a)) + (0xc1bdceee | 0) + w3) | 0;
    b = (c + ((x << 22) | (x >>> 10))) | 0;
    x = (a + ((b & c) | (~b & d)) + (0xf57c0faf | 0) + w4) | 0;
    a = (b + ((x << 7) | (x >>> 25))) | 0;
    x = (d + ((a & b) | (~a & c)) + (0x4787c62a) + w5) | 0;
    d = (a + ((x << 12) | (x >>> 20))) | 0;
    x = (c + ((d & a) | (~d & b)) + (0xa8304613 | 0) + w6) | 0;
    c = (d + ((x << 17) | (x >>> 15))) | 0;
    x = (b + ((c & d) | (~c & a)) + (0xfd469501 | 0) + w7) | 0;
    b = (c + ((x << 22) | (x >>> 10))) | 0;
    x = (a + ((b & c) | (~b & d)) + (0x698098d8) + w8) | 0;
    a = (b + ((x << 7) | (x >>> 25))) | 0;
    x = (d + ((a & b) | (~a & c)) + (0x8b44f7af | 0) + w9) | 0;
    d = (a + ((x << 12) | (x >>> 20))) | 0;
    x = (c + ((d & a) | (~d & b)) + (0xffff5bb1 | 0) + w10) | 0;
    c = (d + ((x << 17) | (x >>> 15))) | 0;
    x = (b + ((c & d) | (~c & a)) + (0x895cd7be | 0) + w11) | 0;
    b = (c + ((x << 22) | (x >>> 10))) | 0;
    x = (a + ((b & c) | (~b & d)) + (0x6b901122) + w12) | 0;
    a = (b + ((x << 7) | (x >>> 25))) | 0;
    x = (d + ((a & b) | (~a & c)) + (0xfd987193 | 0) + w13) | 0;
    d = (a + ((x << 12) | (x >>> 20))) | 0;
    x = (c + ((d & a) | (~d & b)) + (0xa679438e | 0) + w14) | 0;
    c = (d + ((x << 17) | (x >>> 15))) | 0;
    x = (b + ((c & d) | (~c & a)) + (0x49b40821) + w15) | 0;
    b = (c + ((x << 22) | (x >>> 10))) | 0;
    x = (a + ((d & b) | (~d & c)) + (0xf61e2562 | 0) + w1) | 0;
    a = (b + ((x << 5) | (x >>> 27))) | 0;
    x = (d + ((c & a) | (~c & b)) + (0xc040b340 | 0) + w6) | 0;
    d = (a + ((x << 9) | (x >>> 23))) | 0;
    x = (c + ((b & d) | (~b & a)) + (0x265e5a51) + w11) | 0;
    c = (d + ((x << 14) | (x >>> 18))) | 0;
    x = (b + ((a & c) | (~a & d)) + (0xe9b6c7aa | 0) + w0) | 0;
    b = (c + ((x << 20) | (x >>> 12))) | 0;
    x = (a + ((d & b) | (~d & c)) + (0xd62f105d | 0) + w5) | 0;
    a = (b + ((x << 5) | (x >>> 27))) | 0;
    x = (d + ((c & a) | (~c & b)) + (0x2441453) + w10) | 0;
    d = (a + ((x << 9) | (x >>> 23))) | 0;
    x = (c + ((b & d) | (~b & a)) + (0xd8a1e681 | 0) + w15) | 0;
    c = (d + ((x << 14) | (x >>> 18))) | 0;
    x = (b + ((a & c) | (~a & d)) + (0xe7d3fbc8 | 0) + w4) | 0;
    b = (c + ((x << 20) | (x >>> 12))) | 0;
    x = (a + ((d & b) | (~d & c)) + (0x21e1cde6) + w9) | 0;
    a = (b + ((x << 5) | (x >>> 27))) | 0;
    x = (d + ((c & a) | (~c & b)) + (0xc33707d6 | 0) + w14) | 0;
    d = (a + ((x << 9) | (x >>> 23))) | 0;
    x = (c + ((b & d) | (~b & a)) + (0xf4d50d87 | 0) + w3) | 0;
    c = (d + ((x << 14) | (x >>> 18))) | 0;
    x = (b + ((a & c) | (~a & d)) + (0x455a14ed) + w8) | 0;
    b = (c + ((x << 20) | (x >>> 12))) | 0;
    x = (a + ((d & b) | (~d & c)) + (0xa9e3e905 | 0) + w13) | 0;
    a = (b + ((x << 5) | (x >>> 27))) | 0;
    x = (d + ((c & a) | (~c & b)) + (0xfcefa3f8 | 0) + w2) | 0;
    d = (a + ((x << 9) | (x >>> 23))) | 0;
    x = (c + ((b & d) | (~b & a)) + (0x676f02d9) + w7) | 0;
    c = (d + ((x << 14) | (x >>> 18))) | 0;
    x = (b + ((a & c) | (~a & d)) + (0x8d2a4c8a | 0) + w12) | 0;
    b = (c + ((x << 20) | (x >>> 12))) | 0;
    x = (a + (b ^ c ^ d) + (0xfffa3942 | 0) + w5) | 0;
    a = (b + ((x << 4) | (x >>> 28))) | 0;
    x = (d + (a ^ b ^ c) + (0x8771f681 | 0) + w8) | 0;
    d = (a + ((x << 11) | (x >>> 21))) | 0;
    x = (c + (d ^ a ^ b) + (0x6d9d6122) + w11) | 0;
    c = (d + ((x << 16) | (x >>> 16))) | 0;
    x = (b + (c ^ d ^ a) + (0xfde5380c | 0) + w14) | 0;
    b = (c + ((x << 23) | (x >>> 9))) | 0;
    x = (a + (b ^ c ^ d) + (0xa4beea44 | 0) + w1) | 0;
    a = (b + ((x << 4) | (x >>> 28))) | 0;
    x = (d + (a ^ b ^ c) + (0x4bdecfa9) + w4) | 0;
    d = (a + ((x << 11) | (x >>> 21))) | 0;
    x = (c + (d ^ a ^ b) + (0xf6bb4b60 | 0) + w7) | 0;
    c = (d + ((x << 16) | (x >>> 16))) | 0;
    x = (b + (c ^ d ^ a) + (0xbebfbc70 | 0) + w10) | 0;
    b = (c + ((x << 23) | (x >>> 9))) | 0;
    x = (a + (b ^ c ^ d) + (0x289b7ec6) + w13) | 0;
    a = (b + ((x << 4) | (x >>> 28))) | 0;
    x = (d + (a ^ b ^ c) + (0xeaa127fa | 0) + w0) | 0;
    d = (a + ((x << 11) | (x >>> 21))) | 0;
    x = (c + (d ^ a ^ b) + (0xd4ef3085 | 0) + w3) | 0;
    c = (d + ((x << 16) | (x >>> 16))) | 0;
    x = (b + (c ^ d ^ a) + (0x4881d05) + w6) | 0;
    b = (c + ((x << 23) | (x >>> 9))) | 0;
    x = (a + (b ^ c ^ d) + (0xd9d4d039 | 0) + w9) | 0;
    a = (b + ((x << 4) | (x >>> 28))) | 0;
    x = (d + (a ^ b ^ c) + (0xe6db99e5 | 0) + w12) | 0;
    d = (a + ((x << 11) | (x >>> 21))) | 0;
    x = (c + (d ^ a ^ b) + (0x1fa27cf8) + w15) | 0;
    c = (d + ((x << 16) | (x >>> 16))) | 0;
    x = (b + (c ^ d ^ a) + (0xc4ac5665 | 0) + w2) | 0;
    b = (c + ((x << 23) | (x >>> 9))) | 0;
    x = (a + (c ^ (b | ~d)) + (0xf4292244 | 0) + w0) | 0;
    a = (b + ((x << 6) | (x >>> 26))) | 0;
    x = (d + (b ^ (a | ~c)) + (0x432aff97) + w7) | 0;
    d = (a + ((x << 10) | (x >>> 22))) | 0;
    x = (c + (a ^ (d | ~b)) + (0xab9423a7 | 0) + w14) | 0;
    c = (d + ((x << 15) | (x >>> 17))) | 0;
    x = (b + (d ^ (c | ~a)) + (0xfc93a039 | 0) + w5) | 0;
    b = (c + ((x << 21) | (x >>> 11))) | 0;
    x = (a + (c ^ (b | ~d)) + (0x655b59c3) + w12) | 0;
    a = (b + ((x << 6) | (x >>> 26))) | 0;
    x = (d + (b ^ (a | ~c)) + (0x8f0ccc92 | 0) + w3) | 0;
    d = (a + ((x << 10) | (x >>> 22))) | 0;
    x = (c + (a ^ (d | ~b)) + (0xffeff47d | 0) + w10) | 0;
    c = (d + ((x << 15) | (x >>> 17))) | 0;
    x = (b + (d ^ (c | ~a)) + (0x85845dd1 | 0) + w1) | 0;
    b = (c + ((x << 21) | (x >>> 11))) | 0;
    x = (a + (c ^ (b | ~d)) + (0x6fa87e4f) + w8) | 0;
    a = (b + ((x << 6) | (x >>> 26))) | 0;
    x = (d + (b ^ (a | ~c)) + (0xfe2ce6e0 | 0) + w15) | 0;
    d = (a + ((x << 10) | (x >>> 22))) | 0;
    x = (c + (a ^ (d | ~b)) + (0xa3014314 | 0) + w6) | 0;
    c = (d + ((x << 15) | (x >>> 17))) | 0;
    x = (b + (d ^ (c | ~a)) + (0x4e0811a1) + w13) | 0;
    b = (c + ((x << 21) | (x >>> 11))) | 0;
    x = (a + (c ^ (b | ~d)) + (0xf7537e82 | 0) + w4) | 0;
    a = (b + ((x << 6) | (x >>> 26))) | 0;
    x = (d + (b ^ (a | ~c)) + (0xbd3af235 | 0) + w11) | 0;
    d = (a + ((x << 10) | (x >>> 22))) | 0;
    x = (c + (a ^ (d | ~b)) + (0x2ad7d2bb) + w2) | 0;
    c = (d + ((x << 15) | (x >>> 17))) | 0;
    x = (b + (d ^ (c | ~a)) + (0xeb86d391 | 0) + w9) | 0;
    b = (c + ((x << 21) | (x >>> 11))) | 0;
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
  }
  state[0] = h0;
  state[1] = h1;
  state[2] = h2;
  state[3] = h3;
  for (let i = 0; i < 4; i++) {
    const s = state[i];
    out[at + 4 * i] = s & 0xff;
    out[at + 4 * i + 1] = (s >>> 8) & 0xff;
    out[at + 4 * i + 2] = (s >>> 16) & 0xff;
    out[at + 4 * i + 3] = (s >>> 24) & 0xff;
  }
}

/** The little-endian 32-bit word at `at`. */
function word(m: Uint8Array, at: number): number {
  return m[at] | (m[at + 1] << 8) | (m[at + 2] << 16) | (m[at + 3] << 24);
}
