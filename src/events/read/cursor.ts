/**
 * Event search cursors: the position of the last event of a page, in the search order
 * (timestamp, received_at, seq, event_id, all descending), plus a fingerprint of the search it
 * came from (src/query/cursor.ts). The next page is every match strictly after that position
 * (keyset paging), so events arriving meanwhile never shift it: no duplicate, no gap. A cursor
 * from a search with other filters, range or organization is a 400, since its position means
 * nothing there.
 */
import { decodeOpaqueCursor, encodeOpaqueCursor, searchFingerprint } from '../../query/cursor.ts';
import { UUID_PATTERN } from '../../uuid.ts';
import type { EventSelection } from './source.ts';

export interface EventPosition {
  /** DateTime64(3) texts, as the engine printed them. */
  timestamp: string;
  received_at: string;
  seq: number;
  event_id: string;
}

/** Organization, filters, range and cohort (not size); a search without a cohort keeps the fingerprint it always had. */
const fingerprintOf = (selection: EventSelection) =>
  searchFingerprint([selection.orgId, selection.filtersBool, selection.filters, selection.range?.start ?? null, selection.range?.end ?? null, ...(selection.cohort ? [selection.cohort] : [])]);

export function encodeCursor(position: EventPosition, selection: EventSelection): string {
  const { timestamp: t, received_at: r, seq: s, event_id: e } = position;
  return encodeOpaqueCursor({ t, r, s, e }, fingerprintOf(selection));
}

const DATETIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,9})?$/;

export function decodeCursor(cursor: string, selection: EventSelection): EventPosition {
  const p = decodeOpaqueCursor(
    cursor,
    fingerprintOf(selection),
    (x) =>
      typeof x.t === 'string' && DATETIME.test(x.t) &&
      typeof x.r === 'string' && DATETIME.test(x.r) &&
      Number.isInteger(x.s) && (x.s as number) >= 0 && (x.s as number) <= 65535 &&
      typeof x.e === 'string' && UUID_PATTERN.test(x.e),
    'filters_bool, filters, range and cohort',
  );
  return { timestamp: p.t as string, received_at: p.r as string, seq: p.s as number, event_id: p.e as string };
}
