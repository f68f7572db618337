/**
 * A RowBinary writer: the engine's binary row format (each column in the order of the INSERT's
 * column list, no names, no separators), for the write paths that build their rows themselves.
 * @clickhouse/client has no RowBinary insert; the bytes go through `client.exec` as they are.
 *
 * Encodings (ClickHouse docs, "RowBinary"): String = unsigned LEB128 byte length + UTF-8 bytes;
 * FixedString(N) = N bytes; UInt8/UInt16/Int64 = little endian; DateTime64(3) = Int64 ticks (ms);
 * UUID = its two 64-bit halves, each little endian (the textual first half first).
 * LowCardinality(String) is written as String.
 */

const MIN_CAPACITY = 4096;

export class RowBinaryWriter {
  private buf: Buffer;
  private at = 0;

  constructor(capacity = MIN_CAPACITY) {
    this.buf = Buffer.allocUnsafe(Math.max(capacity, 16));
  }

  get length(): number {
    return this.at;
  }

  /** Starts over, keeping the buffer: a writer reused for every request allocates only the copy `finish` makes. */
  reset(): void {
    this.at = 0;
  }

  /** The bytes written so far (a copy of exactly that size: the writer's buffer may be larger). */
  finish(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.at));
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

  /** Int64 of a safe integer (milliseconds, counts). */
  int64(n: number): void {
    this.room(8);
    const low = n % 4294967296;
    const lowU = low < 0 ? low + 4294967296 : low;
    this.buf.writeUInt32LE(lowU, this.at);
    this.buf.writeInt32LE((n - lowU) / 4294967296, this.at + 4);
    this.at += 8;
  }

  /** DateTime64(3): milliseconds since the epoch. */
  dateTime64ms(ms: number): void {
    this.int64(ms);
  }

  /** Raw bytes (FixedString, or a UUID already in wire order). */
  bytes(b: Uint8Array, from = 0, to = b.length): void {
    const n = to - from;
    this.room(n);
    this.buf.set(b.subarray(from, to), this.at);
    this.at += n;
  }

  /** A UUID from its RFC 9562 bytes (as `uuid`'s parse or randomFillSync give them). */
  uuid(b: Uint8Array, from = 0): void {
    this.room(16);
    const out = this.buf;
    for (let i = 0; i < 8; i++) out[this.at + i] = b[from + 7 - i];
    for (let i = 0; i < 8; i++) out[this.at + 8 + i] = b[from + 15 - i];
    this.at += 16;
  }

  /** An empty String (one byte). */
  empty(): void {
    this.uint8(0);
  }

  /**
   * A String; returns its UTF-8 byte length. Encoded once, straight into the buffer: the length
   * prefix is sized for the longest the text can be (3 bytes per UTF-16 unit) and the bytes moved
   * back in the rare case the real length needs a shorter prefix.
   */
  string(s: string): number {
    const max = s.length * 3;
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
  uint16(): number {
    const n = this.buf.readUInt16LE(this.at);
    this.at += 2;
    return n;
  }
  int64(): number {
    const n = Number(this.buf.readBigInt64LE(this.at));
    this.at += 8;
    return n;
  }
  bytes(n: number): Buffer {
    const b = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return b;
  }
  uuid(): string {
    const b = this.bytes(16);
    const hex = Buffer.concat([Buffer.from(b.subarray(0, 8)).reverse(), Buffer.from(b.subarray(8, 16)).reverse()]).toString('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }
  string(): string {
    let n = 0;
    let shift = 1;
    for (;;) {
      const b = this.buf[this.at++];
      n += (b & 0x7f) * shift;
      if (b < 0x80) break;
      shift *= 128;
    }
    return this.bytes(n).toString('utf8');
  }
}
