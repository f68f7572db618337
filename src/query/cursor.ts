/**
 * Opaque keyset cursors (survey search, event search): a position in the search order plus a
 * fingerprint of the search it came from, as base64url JSON. A cursor that does not parse, or
 * whose fingerprint is another search's, is a 400 naming `cursor`. Each search validates the
 * position fields it reads.
 */
import { createHash } from 'node:crypto';
import { invalid } from '../errors.ts';

/** Which search a cursor belongs to: a hash of what defines it (organization, filters, range...). */
export function searchFingerprint(parts: readonly unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 22);
}

export function encodeOpaqueCursor(position: Record<string, unknown>, fingerprint: string): string {
  return Buffer.from(JSON.stringify({ ...position, f: fingerprint })).toString('base64url');
}

/**
 * The position fields of a cursor made for the search with `fingerprint`; `valid` checks them.
 * `what` names the parts of the search a client must send again (for the mismatch message).
 */
export function decodeOpaqueCursor(cursor: string, fingerprint: string, valid: (p: Record<string, unknown>) => boolean, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || !valid(parsed as Record<string, unknown>)) {
    throw invalid('cursor is not a cursor this service returned', [{ path: 'cursor', message: 'not a valid cursor' }]);
  }
  if ((parsed as { f?: unknown }).f !== fingerprint) {
    throw invalid(`cursor belongs to a search with other ${what}: send the ${what} of the search that returned it`, [{ path: 'cursor', message: 'does not match this search' }]);
  }
  return parsed as Record<string, unknown>;
}
