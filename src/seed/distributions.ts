import { v5 } from 'uuid';

/**
 * Resolution of every weighted choice the seed makes inside ClickHouse: a choice is
 * `table[1 + hash % TABLE_SIZE]`, an O(1) array lookup on a constant array (much cheaper per row
 * than a cumulative search), at the price of weights rounded to 1/TABLE_SIZE.
 */
export const TABLE_SIZE = 1000;

/**
 * Turns relative weights into a lookup table of TABLE_SIZE slots holding the chosen value
 * (`values[i]`, default the index i). Slot counts use the largest-remainder method so they sum to
 * exactly `size`; every positive weight gets at least one slot so no category silently vanishes.
 */
export function lookupTable<T = number>(weights: readonly number[], values?: readonly T[], size = TABLE_SIZE): T[] {
  if (weights.length === 0) throw new Error('lookupTable: no weights');
  if (weights.some((w) => !(w >= 0) || !Number.isFinite(w))) throw new Error('lookupTable: weights must be finite and >= 0');
  const total = weights.reduce((a, b) => a + b, 0);
  if (total <= 0) throw new Error('lookupTable: weights sum to 0');
  const positive = weights.filter((w) => w > 0).length;
  if (positive > size) throw new Error('lookupTable: more categories than slots');

  const exact = weights.map((w) => (w / total) * size);
  const counts = exact.map((x, i) => (weights[i] > 0 ? Math.max(1, Math.floor(x)) : 0));
  let assigned = counts.reduce((a, b) => a + b, 0);
  // Hand out the missing slots by largest remainder, take back extra ones (from the `max(1, …)`)
  // from the largest categories, so the table keeps its exact size.
  const byRemainder = exact.map((x, i) => ({ i, r: x - Math.floor(x) })).filter(({ i }) => weights[i] > 0).sort((a, b) => b.r - a.r || a.i - b.i);
  for (let k = 0; assigned < size; k = (k + 1) % byRemainder.length, assigned++) counts[byRemainder[k].i]++;
  while (assigned > size) {
    const largest = counts.indexOf(Math.max(...counts));
    counts[largest]--;
    assigned--;
  }

  const table: T[] = [];
  counts.forEach((count, i) => {
    const value = values ? values[i] : (i as unknown as T);
    for (let c = 0; c < count; c++) table.push(value);
  });
  return table;
}

/** Share of the table's slots whose value is below `threshold` (the CDF the table really encodes). */
export function shareBelow(table: readonly number[], threshold: number): number {
  return table.filter((v) => v < threshold).length / table.length;
}

/**
 * A name-based UUID (v5, from the `uuid` package) of `parts`, so the same org and seed give the
 * same surveys, questions and channels on every run. The namespace is the 16 bytes of
 * 'tallyhouse-seed\0': the ids are the very ones of the hand-written SHA-1 of
 * 'tallyhouse-seed\0' + parts joined by NUL that this replaced.
 */
const SEED_NAMESPACE = new Uint8Array(Buffer.from('tallyhouse-seed\u0000', 'latin1'));
export function nameUuid(...parts: (string | number)[]): string {
  return v5(parts.join('\u0000'), SEED_NAMESPACE);
}
