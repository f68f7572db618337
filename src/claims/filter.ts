/**
 * The in-memory side of the claims module (claims.ts): a blocked Bloom filter of 16-byte claim
 * keys, in daily generations. It answers "may this key be claimed?": `false` is certain (no key
 * added is ever reported absent), `true` may be wrong (a false positive), and the caller confirms
 * it with a lookup in the database.
 *
 * Layout: each segment is an array of 64-byte blocks (one cache line, 16 words of 32 bits); a key
 * picks one block from its first 4 bytes and sets one bit in each of the block's 16 words, each
 * bit's position a 5-bit field of its other 12 bytes (the split-block Bloom filter of
 * Parquet/Impala, widened to 16 words). Keys are MD5 digests, so their bytes are already uniform:
 * no hashing here.
 *
 * Memory: BITS_PER_KEY = 48 bits (6 bytes) per key at a segment's design capacity, for a
 * false-positive rate of about 2e-7 per full segment (the unit test measures it); a generation
 * allocates at most twice what it holds. A key is tested against every segment of every live
 * generation, so the rate it sees is about that times the full segments alive (a 7-day window of
 * 1 million keys a day: 8 generations of 5-6 full segments, ~1e-5).
 *
 * Generations: a key is added to the generation of its claim's UTC day; a generation whose whole
 * day is older than the window is dropped whole, which is how keys leave the filter. A generation
 * starts with a small segment and adds segments of twice the size of the last one as it fills.
 *
 * The cap (`maxBytes`): no segment is allocated past it. Keys then go into the newest segment
 * anyway, beyond its design capacity: its false-positive rate grows toward 1, so more and more keys
 * go to the confirming lookup (with every key, what a service without this filter does), but a
 * key added is never reported absent. `maxBytes = 0` keeps no filter: every key may be claimed.
 */

/** Bits per key at a segment's design capacity. */
export const BITS_PER_KEY = 48;
const BLOCK_BYTES = 64;
const WORDS = BLOCK_BYTES / 4;
const FIRST_SEGMENT_KEYS = 1 << 14;
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The key's 16 bit positions, one in each word of its block: 16 fields of 5 bits of bytes 4..15 (80
 * of its 96 bits), six in each of the first two 32-bit words and four in the third. Independent
 * fields, so the block behaves as an ideal 16-way blocked filter. A JS shift takes its count modulo
 * 32, so `1 << (h >>> 5 * f)` is the mask of field f.
 */
const word = (key: Uint8Array, o: number) => key[o] | (key[o + 1] << 8) | (key[o + 2] << 16) | (key[o + 3] << 24);

/** The first 4 bytes of the key: which block. */
const blockHash = (key: Uint8Array, at: number) => word(key, at) >>> 0;

/** One fixed-size blocked Bloom filter. */
class Segment {
  readonly words: Uint32Array;
  readonly blocks: number;
  keys = 0;
  constructor(readonly capacity: number) {
    this.blocks = Math.max(1, Math.ceil((capacity * BITS_PER_KEY) / (BLOCK_BYTES * 8)));
    this.words = new Uint32Array(this.blocks * WORDS);
  }
  get bytes(): number {
    return this.words.byteLength;
  }
  /** Sets the key's bits (block hash h, bit positions a, b, c). */
  set(h: number, a: number, b: number, c: number): void {
    const w = this.words;
    const base = this.blockOf(h);
    for (let f = 0; f < 6; f++) w[base + f] |= 1 << (a >>> (5 * f));
    for (let f = 0; f < 6; f++) w[base + 6 + f] |= 1 << (b >>> (5 * f));
    for (let f = 0; f < 4; f++) w[base + 12 + f] |= 1 << (c >>> (5 * f));
    this.keys++;
  }
  /** Whether every bit of the key is set. */
  test(h: number, a: number, b: number, c: number): boolean {
    const w = this.words;
    const base = this.blockOf(h);
    for (let f = 0; f < 6; f++) if (((w[base + f] >>> (a >>> (5 * f))) & 1) === 0) return false;
    for (let f = 0; f < 6; f++) if (((w[base + 6 + f] >>> (b >>> (5 * f))) & 1) === 0) return false;
    for (let f = 0; f < 4; f++) if (((w[base + 12 + f] >>> (c >>> (5 * f))) & 1) === 0) return false;
    return true;
  }
  /** The first word of the key's block. */
  private blockOf(h: number): number {
    return Math.floor((h * this.blocks) / 4294967296) * WORDS;
  }
}

class Generation {
  readonly segments: Segment[] = [];
  constructor(readonly day: number) {}
}

export interface FilterStats {
  keys: number;
  bytes: number;
  segments: number;
  generations: number;
  /** Keys added past the cap, into a segment already at its design capacity. */
  overCap: number;
}

export class ClaimFilter {
  private generations = new Map<number, Generation>();
  /** Every segment of every generation (each key is tested against all of them). */
  private segments: Segment[] = [];
  private last: Generation | undefined;
  private bytes = 0;
  private overCap = 0;

  /** `windowMs` undefined: one generation, never dropped (claims without a window). */
  constructor(
    private readonly maxBytes: number,
    private readonly windowMs: number | undefined,
  ) {}

  /** Whether the key (16 bytes of `key` from `at`) may have been added; false is certain. */
  mayHold(key: Uint8Array, at = 0): boolean {
    if (this.maxBytes === 0) return true;
    const h = blockHash(key, at);
    const a = word(key, at + 4);
    const b = word(key, at + 8);
    const c = word(key, at + 12);
    const all = this.segments;
    for (let i = 0; i < all.length; i++) if (all[i].test(h, a, b, c)) return true;
    return false;
  }

  /** Adds a key claimed at `claimedAtMs` (ignored without a window); claims older than the window are not kept. */
  add(key: Uint8Array, claimedAtMs: number, at = 0, now = Date.now()): void {
    this.testAndAdd(key, claimedAtMs, at, now);
  }

  /**
   * `mayHold` then `add` with one computation of the key's bits: whether the filter may have held
   * the key before this call.
   */
  testAndAdd(key: Uint8Array, claimedAtMs: number, at = 0, now = Date.now()): boolean {
    if (this.maxBytes === 0) return true;
    const h = blockHash(key, at);
    const a = word(key, at + 4);
    const b = word(key, at + 8);
    const c = word(key, at + 12);
    const all = this.segments;
    let held = false;
    for (let i = 0; i < all.length; i++) {
      if (all[i].test(h, a, b, c)) {
        held = true;
        break;
      }
    }
    const day = this.windowMs === undefined ? 0 : Math.floor(claimedAtMs / DAY_MS);
    if (this.windowMs !== undefined && (day + 1) * DAY_MS <= now - this.windowMs) return held;
    // Claims of one flush are of one day: the last generation added to is kept at hand.
    let g = this.last?.day === day ? this.last : this.generations.get(day);
    if (!g) {
      this.expire(now);
      this.generations.set(day, (g = new Generation(day)));
    }
    this.last = g;
    let s = g.segments[g.segments.length - 1];
    if (!s || s.keys >= s.capacity) {
      const next = new Segment(s ? s.capacity * 2 : FIRST_SEGMENT_KEYS);
      if (this.bytes + next.bytes <= this.maxBytes) {
        g.segments.push((s = next));
        this.segments.push(s);
        this.bytes += next.bytes;
      } else {
        // Past the cap. A generation always has a segment of its own (a key must not sit in a
        // generation dropped before its own day is): one block, which saturates at once.
        if (!s) {
          g.segments.push((s = new Segment(1)));
          this.segments.push(s);
          this.bytes += s.bytes;
        }
        this.overCap++;
      }
    }
    s.set(h, a, b, c);
    return held;
  }

  /** Drops the generations whose whole day is older than the window. */
  expire(now = Date.now()): void {
    if (this.windowMs === undefined) return;
    for (const [day, g] of this.generations) {
      if ((day + 1) * DAY_MS <= now - this.windowMs) {
        this.generations.delete(day);
        if (this.last === g) this.last = undefined;
        for (const s of g.segments) this.bytes -= s.bytes;
        this.segments = this.segments.filter((s) => !g.segments.includes(s));
      }
    }
  }

  stats(): FilterStats {
    let keys = 0;
    let segments = 0;
    for (const g of this.generations.values()) for (const s of g.segments) (keys += s.keys), segments++;
    return { keys, bytes: this.bytes, segments, generations: this.generations.size, overCap: this.overCap };
  }

}
