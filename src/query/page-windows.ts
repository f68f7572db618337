/**
 * Page windows: a search's page read from the smallest recent window that holds it. A search is
 * a count, then a page (newest first). The count also says how many matches lie at or after each
 * window start (1 hour, 1 day, 7, 30 and 365 days before the anchor: min(range end, now, the
 * cursor's position)); the page then reads only from the smallest window that holds the newest
 * matches it needs. Every match of a window is newer than any match before it, so the page is the
 * same as over the whole selection, but the engine sorts the window's rows, not every match's.
 */
import { DT64, type ParamBag } from '../clickhouse/sql.ts';
import { formatDbMicros, parseInstantMicros } from '../time/iso.ts';

export const PAGE_WINDOWS_SECONDS = [3600, 86_400, 7 * 86_400, 30 * 86_400, 365 * 86_400] as const;

/** The window starts (DateTime64(6) texts, latest first) before an instant in µs. */
export function windowStartsBefore(anchorMicros: bigint): string[] {
  return PAGE_WINDOWS_SECONDS.map((s) => formatDbMicros(anchorMicros - BigInt(s) * 1_000_000n));
}

/** The windows' anchor, µs: the earliest of the range end, now, and the cursor's position. */
export function pageWindowAnchor(rangeEnd: string | undefined, nowMs: number, cursor?: string): bigint {
  let anchor = BigInt(nowMs) * 1000n;
  for (const t of [rangeEnd, cursor]) {
    const micros = t === undefined ? null : parseInstantMicros(t);
    if (micros !== null && micros < anchor) anchor = micros;
  }
  return anchor;
}

/** The count columns `, countIf(<cond AND> time >= start_i) AS w<i>` of each window start. */
export function windowCountColumns(time: string, starts: readonly string[], bag: ParamBag, cond?: string): string {
  return starts.map((w, i) => `, countIf(${cond ? `${cond} AND ` : ''}${time} >= ${bag.add(w, DT64)}) AS w${i}`).join('');
}

/** A count row's window counts. */
export type WindowCounts = Partial<Record<`w${number}`, number | string>>;

/** The first (smallest) window holding at least `needed` matches, or undefined (the whole selection). */
export function smallestWindowHolding(row: WindowCounts | undefined, starts: readonly string[], needed: number): string | undefined {
  if (!row) return undefined;
  return starts.find((_, i) => Number(row[`w${i}`] ?? 0) >= needed);
}
