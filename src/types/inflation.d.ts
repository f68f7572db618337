// inflation ships no types. It returns `stream` itself for identity, otherwise
// `stream.pipe(zlib.createUnzip(options))` (or a brotli decompressor); throws 415 for others.
declare module 'inflation' {
  import type { Readable, Transform } from 'node:stream';
  import type { ZlibOptions } from 'node:zlib';
  function inflate(stream: Readable, options?: ZlibOptions & { encoding?: string }): Readable | Transform;
  export default inflate;
}
