/**
 * Event search cursors: the position of the last event of a page, in the search order
 * (timestamp, received_at, seq, event_id, all descending), plus a fingerprint of the search it
 * came from. The next page is every match strictly after that position (keyset paging), so events
 * arriving meanwhile never shift it: no duplicate, no gap. Opaque to clients (base64url JSON); a
 * cursor from a search with other filters, range or organization is a 400, since its position
 * means nothing there.
 */
import { createHash } from 'node:crypto';
import { invalid } from '../../errors.ts';
import type { EventScope } from './source.ts';

export interface EventPosition {
  /** DateTime64(3) texts, as the engine printed them. */
  timestamp: string;
  received_at: string;
  seq: number;
  event_id: string;
}

/** Which search a cursor belongs to: its organization, filters and range (not its size). */
export function searchFingerprint(scope: EventScope): string {
  const what = JSON.stringify([scope.orgId, scope.filtersBool, scope.filters, scope.range?.start ?? null, scope.range?.end ?? null]);
  return createHash('sha256').update(what).digest('base64url').slice(0, 22);
}

export function encodeCursor(position: EventPosition, scope: EventScope): string {
  const { timestamp: t, received_at: r, seq: s, event_id: e } = position;
  return Buffer.from(JSON.stringify({ t, r, s, e, f: searchFingerprint(scope) })).toString('base64url');
}

const DATETIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,9})?$/;
const UUID = /^[\da-f]{8}(?:-[\da-f]{4}){3}-[\da-f]{12}$/i;

export function decodeCursor(cursor: string, scope: EventScope): EventPosition {
  let parsed: { t?: unknown; r?: unknown; s?: unknown; e?: unknown; f?: unknown } | undefined;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const ok =
    parsed !== null && typeof parsed === 'object' &&
    typeof parsed.t === 'string' && DATETIME.test(parsed.t) &&
    typeof parsed.r === 'string' && DATETIME.test(parsed.r) &&
    Number.isInteger(parsed.s) && (parsed.s as number) >= 0 && (parsed.s as number) <= 65535 &&
    typeof parsed.e === 'string' && UUID.test(parsed.e);
  if (!ok) throw invalid('cursor is not a cursor this service returned', [{ path: 'cursor', message: 'not a valid cursor' }]);
  if (parsed!.f !== searchFingerprint(scope)) {
    throw invalid('cursor belongs to a search with other filters or range: send the filters_bool, filters and range of the search that returned it', [
      { path: 'cursor', message: 'does not match this search' },
    ]);
  }
  return { timestamp: parsed!.t as string, received_at: parsed!.r as string, seq: parsed!.s as number, event_id: parsed!.e as string };
}
