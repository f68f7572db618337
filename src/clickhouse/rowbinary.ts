/**
 * A RowBinary writer: the engine's binary row format (each column in the order of the INSERT's
 * column list, no names, no separators), for the write paths that build their rows themselves.
 * @clickhouse/client has no RowBinary insert; the bytes go through `client.exec` as they are.
 *
 * Encodings (ClickHouse docs, "RowBinary"): String = unsigned LEB128 byte length + UTF-8 bytes
 * (LowCardinality(String) too); Array = LEB128 length + the elements; Nullable = one byte (1: NULL)
 * then the value when not NULL; Bool/UInt8/Enum8 = one byte; Int64 and Float64 = 8 bytes, little
 * endian; UInt16 = 2 bytes little endian; FixedString(N) = N bytes; DateTime64(P) = Int64 ticks
 * of 10^-P s; UUID = its two 64-bit halves, each little endian (the textual first half first).
 */

const MIN_CAPACITY = 4096;
/** Strings shorter than this (and below 128 bytes, so a one-byte length) take `string`'s ASCII loop. */
const SHORT_STRING = 64;
/** `text` without a tag character. */
const NO_TAG = -1;

/** Position in a UUID text of the first digit of byte i (0..15). */
const DIGIT_AT = Array.from({ length: 16 }, (_, i) => 2 * i + (i >= 4 ? 1 : 0) + (i >= 6 ? 1 : 0) + (i >= 8 ? 1 : 0) + (i >= 10 ? 1 : 0));
/** A hex digit's value by its char code. */
const HEX = new Uint8Array(128);
for (let d = 0; d < 10; d++) HEX[48 + d] = d;
for (let d = 0; d < 6; d++) HEX[65 + d] = HEX[97 + d] = 10 + d;

export class RowBinaryWriter {
  private buf: Buffer;
  /** Where the piece being written starts: the bytes before it were handed out by `take`. */
  private start = 0;
  private at = 0;
  private readonly capacity: number;

  constructor(capacity = MIN_CAPACITY) {
    this.capacity = Math.max(capacity, 16);
    this.buf = Buffer.allocUnsafe(this.capacity);
  }

  /** The bytes of the piece written so far. */
  get length(): number {
    return this.at - this.start;
  }

  /** The bytes written so far (a view of the writer's buffer: write nothing more after it). */
  finish(): Buffer {
    return this.buf.subarray(this.start, this.at);
  }

  /** The bytes written so far, copied out at their size: for a writer reused with `reset`. */
  copyOut(): Buffer {
    return Buffer.from(this.buf.subarray(this.start, this.at));
  }

  /**
   * The piece written since the last `take` (or since the writer was made), as a view of the
   * writer's buffer, which it never writes again: the next piece follows it, and a buffer with
   * too little room left for one is left to the pieces it holds. Many pieces share a buffer of
   * `capacity` bytes (a slab), so a writer reused for every request allocates once per slab,
   * copies nothing out, and a piece holds its slab's memory while it lives.
   */
  take(): Buffer {
    const piece = this.buf.subarray(this.start, this.at);
    this.start = this.at;
    if (this.buf.length - this.at < this.capacity / 8) {
      this.buf = Buffer.allocUnsafe(this.capacity);
      this.start = this.at = 0;
    }
    return piece;
  }

  /** Starts the piece over (drops what was written since the last `take`), keeping the buffer. */
  reset(): void {
    this.at = this.start;
  }

  /** Drops what was written after the piece's first `length` bytes (a `length` read before). */
  rewind(length: number): void {
    this.at = this.start + length;
  }

  /**
   * Makes room for `bytes` more, for the unchecked writes of `asciiByte`/`asciiText` (a String
   * written in parts: its length first, then exactly that many bytes).
   */
  reserve(bytes: number): void {
    this.room(bytes);
  }

  /** One byte, with room reserved (`reserve`). */
  asciiByte(c: number): void {
    this.buf[this.at++] = c;
  }

  /**
   * The characters of `s`, one byte each, with room reserved (`reserve`): true when each is in
   * 0x20..0x7f and, unless `quotable`, neither `"` nor `\` (text JSON writes as it is). Else
   * false, having written some of them: the caller rewinds.
   */
  asciiText(s: string, quotable: boolean): boolean {
    const buf = this.buf;
    const at = this.at;
    const len = s.length;
    for (let i = 0; i < len; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x20 || c > 0x7f || (!quotable && (c === 0x22 || c === 0x5c))) return false;
      buf[at + i] = c;
    }
    this.at = at + len;
    return true;
  }

  /** Makes room for `bytes` more: a new buffer holds the current piece when this one is full. */
  private room(bytes: number): void {
    if (this.at + bytes <= this.buf.length) return;
    const used = this.at - this.start;
    const next = Buffer.allocUnsafe(Math.max(this.capacity, 2 * (used + bytes)));
    this.buf.copy(next, 0, this.start, this.at);
    this.buf = next;
    this.start = 0;
    this.at = used;
  }

  uint8(n: number): void {
    this.room(1);
    this.buf[this.at++] = n;
  }

  uint16(n: number): void {
    this.room(2);
    this.buf[this.at] = n & 0xff;
    this.buf[this.at + 1] = n >>> 8;
    this.at += 2;
  }

  uint32(n: number): void {
    this.room(4);
    this.buf.writeUInt32LE(n, this.at);
    this.at += 4;
  }

  /** DateTime64(3) of epoch milliseconds (a safe integer): Int64 little endian, without a bigint. */
  dateTime64ms(ms: number): void {
    this.room(8);
    const low = ms % 4294967296;
    const lowU = low < 0 ? low + 4294967296 : low;
    // Both halves as int32 bit patterns (two's complement for a negative high half).
    const high = (ms - lowU) / 4294967296;
    const out = this.buf;
    const at = this.at;
    out[at] = lowU;
    out[at + 1] = lowU >>> 8;
    out[at + 2] = lowU >>> 16;
    out[at + 3] = lowU >>> 24;
    out[at + 4] = high;
    out[at + 5] = high >> 8;
    out[at + 6] = high >> 16;
    out[at + 7] = high >> 24;
    this.at = at + 8;
  }

  /** Raw bytes (a FixedString). A few are copied one by one: no view made for them. */
  bytes(b: Uint8Array, from = 0, to = b.length): void {
    const n = to - from;
    this.room(n);
    if (n <= 32) {
      const out = this.buf;
      const at = this.at - from;
      for (let i = from; i < to; i++) out[at + i] = b[i];
    } else this.buf.set(b.subarray(from, to), this.at);
    this.at += n;
  }

  /** `count` zero bytes: as many empty Strings, or zero numbers. */
  zeros(count: number): void {
    this.room(count);
    const out = this.buf;
    for (let i = this.at; i < this.at + count; i++) out[i] = 0;
    this.at += count;
  }

  /** A UUID from its RFC 9562 bytes (as `uuid`'s parse or a random fill give them). */
  uuidBytes(b: Uint8Array, from = 0): void {
    this.room(16);
    const out = this.buf;
    const at = this.at;
    for (let i = 0; i < 8; i++) {
      out[at + i] = b[from + 7 - i];
      out[at + 8 + i] = b[from + 15 - i];
    }
    this.at = at + 16;
  }

  /** An empty String (one byte). */
  empty(): void {
    this.uint8(0);
  }

  /** Bool (one byte, 0 or 1). */
  bool(b: boolean): void {
    this.uint8(b ? 1 : 0);
  }

  /** An unsigned LEB128 length (of a String or an Array). */
  varint(n: number): void {
    this.room(10);
    this.at = writeVarint(this.buf, this.at, n);
  }

  /** Int64 of a bigint. */
  int64(n: bigint): void {
    this.room(8);
    this.buf.writeBigInt64LE(n, this.at);
    this.at += 8;
  }

  float64(n: number): void {
    this.room(8);
    this.buf.writeDoubleLE(n, this.at);
    this.at += 8;
  }

  /** A UUID from its text (8-4-4-4-12 hex digits, any case, validated before). */
  uuid(text: string): void {
    this.room(16);
    // The 32 digits' positions in the text; each 8-byte half little endian: its last byte first.
    for (let i = 0; i < 16; i++) {
      const at = DIGIT_AT[i < 8 ? 7 - i : 23 - i];
      this.buf[this.at + i] = (HEX[text.charCodeAt(at)] << 4) | HEX[text.charCodeAt(at + 1)];
    }
    this.at += 16;
  }

  /**
   * A String; returns its UTF-8 byte length. Encoded once, straight into the buffer: the length
   * prefix is sized for the longest the text can be (3 bytes per UTF-16 unit) and the bytes moved
   * back in the rare case the real length needs a shorter prefix.
   */
  string(s: string): number {
    return this.text(NO_TAG, s);
  }

  /**
   * A String of one ASCII character (`tag`, its char code) then `s`, without the concatenation
   * (property_map's typed values: 's' + the string...); returns the UTF-8 byte length of `s`.
   */
  taggedString(tag: number, s: string): number {
    return this.text(tag, s);
  }

  /** `string` of `s`, after the character `tag` unless NO_TAG. */
  private text(tag: number, s: string): number {
    const len = s.length;
    const extra = tag === NO_TAG ? 0 : 1;
    // Short ASCII text (names, ids, aliases: most strings of a row) is copied a character at a
    // time: one byte each, a one-byte length, and no call into the native encoder.
    if (len + extra < SHORT_STRING) {
      this.room(len + extra + 1);
      const buf = this.buf;
      const start = this.at + 1 + extra;
      let i = 0;
      for (; i < len; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        buf[start + i] = c;
      }
      if (i === len) {
        buf[this.at] = len + extra;
        if (extra) buf[this.at + 1] = tag;
        this.at = start + len;
        return len;
      }
    }
    // The text is written after the shortest prefix its length allows (its UTF-8 is at least one
    // byte a UTF-16 unit), with room for the longest; moved forward in the rare case its UTF-8
    // needs a longer prefix (non-ASCII text across 128, 16384... bytes).
    const max = len * 3 + extra;
    const width = varintWidth(len + extra);
    this.room(varintWidth(max) + max);
    const start = this.at + width;
    if (extra) this.buf[start] = tag;
    const n = len === 0 ? 0 : this.buf.write(s, start + extra, 'utf8');
    const need = varintWidth(n + extra);
    if (need > width) this.buf.copyWithin(this.at + need, start, start + extra + n);
    this.at = writeVarint(this.buf, this.at, n + extra) + extra + n;
    return n;
  }
}

function varintWidth(n: number): number {
  let w = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    w++;
  }
  return w;
}

function writeVarint(buf: Buffer, at: number, n: number): number {
  while (n >= 0x80) {
    buf[at++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[at++] = n;
  return at;
}

/**
 * Reads a streamed RowBinary answer of fixed-width rows (`rowBytes` each, every column of a fixed
 * width) row by row: `each(buf, at)` reads the row that starts at `at` of `buf`, which is valid
 * only during the call (copy what is kept). A row cut across two chunks of the stream is joined
 * first; whole rows are read in place.
 */
export async function forEachFixedRow(stream: AsyncIterable<Buffer>, rowBytes: number, each: (buf: Buffer, at: number) => void): Promise<void> {
  let rest: Buffer = Buffer.alloc(0);
  for await (const chunk of stream) {
    const buf = rest.length > 0 ? Buffer.concat([rest, chunk]) : chunk;
    let at = 0;
    for (; at + rowBytes <= buf.length; at += rowBytes) each(buf, at);
    rest = buf.subarray(at);
  }
}

/** Reads back what RowBinaryWriter wrote (tests, and the bench's checks). */
export class RowBinaryReader {
  at = 0;
  constructor(readonly buf: Buffer) {}
  get done(): boolean {
    return this.at >= this.buf.length;
  }
  uint8(): number {
    return this.buf[this.at++];
  }
  bool(): boolean {
    return this.uint8() !== 0;
  }
  uint16(): number {
    const n = this.buf.readUInt16LE(this.at);
    this.at += 2;
    return n;
  }
  bytes(n: number): Buffer {
    const b = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return b;
  }
  varint(): number {
    let n = 0;
    let shift = 1;
    for (;;) {
      const b = this.buf[this.at++];
      n += (b & 0x7f) * shift;
      if (b < 0x80) return n;
      shift *= 128;
    }
  }
  int64(): bigint {
    const n = this.buf.readBigInt64LE(this.at);
    this.at += 8;
    return n;
  }
  float64(): number {
    const n = this.buf.readDoubleLE(this.at);
    this.at += 8;
    return n;
  }
  uuid(): string {
    const b = this.buf.subarray(this.at, this.at + 16);
    this.at += 16;
    const hex = Buffer.concat([Buffer.from(b.subarray(0, 8)).reverse(), Buffer.from(b.subarray(8, 16)).reverse()]).toString('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }
  string(): string {
    const n = this.varint();
    const s = this.buf.toString('utf8', this.at, this.at + n);
    this.at += n;
    return s;
  }
}
