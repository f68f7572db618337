/** A copy of an event chunk's RowBinary body whose first row's `type` (after its 16-byte org_id) claims 2 TiB: the engine refuses it (TOO_LARGE_STRING_SIZE). */
export function tooLargeString(body: Buffer): Buffer {
  const bad = Buffer.from(body);
  bad.set([0xff, 0xff, 0xff, 0xff, 0xff, 0x3f], 16);
  return bad;
}
