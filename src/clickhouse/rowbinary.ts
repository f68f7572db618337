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

/** Position in a UUID text of the first digit of byte i (0..15). */
const DIGIT_AT = Array.from({ length: 16 }, (_, i) => 2 * i + (i >= 4 ? 1 : 0) + (i >= 6 ? 1 : 0) + (i >= 8 ? 1 : 0) + (i >= 10 ? 1 : 0));
/** A hex digit's value by its char code. */
const HEX = new Uint8Array(128);
for (let d = 0; d < 10; d++) HEX[48 + d] = d;
for (let d = 0; d < 6; d++) HEX[65 + d] = HEX[97 + d] = 10 + d;

export class RowBinaryWriter {
  private buf: Buffer;
  private at = 0;

  constructor(capacity = MIN_CAPACITY) {
    this.buf = Buffer.allocUnsafe(Math.max(capacity, 16));
  }

  get length(): number {
    return this.at;
  }

  /** The bytes written so far (a view of the writer's buffer: write nothing more after it). */
  finish(): Buffer {
    return this.buf.subarray(0, this.at);
  }

  /** The bytes written so far, copied out at their size: for a writer reused with `reset`. */
  copyOut(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.at));
  }

  /** Starts over, keeping the buffer: a writer reused for every request allocates only what `copyOut` copies. */
  reset(): void {
    this.at = 0;
  }

  private room(bytes: number): void {
    if (this.at + bytes <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.at + bytes) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.at);
    this.buf = next;
  }

  uint8(n: number): void {
    this.room(1);
    this.buf[this.at++] = n;
  }

  uint16(n: number): void {
    this.room(2);
    this.buf.writeUInt16LE(n, this.at);
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
    this.buf.writeUInt32LE(lowU, this.at);
    this.buf.writeInt32LE((ms - lowU) / 4294967296, this.at + 4);
    this.at += 8;
  }

  /** Raw bytes (a FixedString). */
  bytes(b: Uint8Array, from = 0, to = b.length): void {
    const n = to - from;
    this.room(n);
    this.buf.set(b.subarray(from, to), this.at);
    this.at += n;
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
    const len = s.length;
    // Short ASCII text (names, ids, aliases: most strings of a row) is copied a character at a
    // time: one byte each, a one-byte length, and no call into the native encoder.
    if (len < SHORT_STRING) {
      this.room(len + 1);
      const buf = this.buf;
      const start = this.at + 1;
      let i = 0;
      for (; i < len; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        buf[start + i] = c;
      }
      if (i === len) {
        buf[this.at] = len;
        this.at = start + len;
        return len;
      }
    }
    const max = len * 3;
    const width = varintWidth(max);
    this.room(width + max);
    const start = this.at + width;
    const n = s.length === 0 ? 0 : this.buf.write(s, start, 'utf8');
    const need = varintWidth(n);
    if (need < width) this.buf.copyWithin(this.at + need, start, start + n);
    this.at = writeVarint(this.buf, this.at, n) + n;
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
