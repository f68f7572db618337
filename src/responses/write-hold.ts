/**
 * A test-only stop in the survey-response write: with TALLYHOUSE_TEST_HOLD_AFTER_RESPONSE_INSERT
 * set to a comma-separated list of response ids, a write whose INSERT stored one of them waits
 * there for ever, so that a test can SIGKILL the process between the INSERT's commit and the
 * check that follows it (docs/architecture.md, "What a kill at each step leaves"). Unset (always
 * outside tests), `holdAfterInsert` is a no-op.
 */
const HELD = new Set(
  (process.env.TALLYHOUSE_TEST_HOLD_AFTER_RESPONSE_INSERT ?? '')
    .split(',')
    .map((id) => id.trim().toLowerCase())
    .filter((id) => id !== ''),
);

/** Never resolves when `ids` (lower case) holds a held id; resolves at once otherwise. */
export function holdAfterInsert(ids: Iterable<string>): Promise<void> | undefined {
  if (HELD.size === 0) return undefined;
  for (const id of ids) if (HELD.has(id)) return new Promise<void>(() => {});
  return undefined;
}
