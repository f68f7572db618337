/**
 * Survey search cursors: the position of the last response of a page in the search order
 * (created_at, id, both descending), plus a fingerprint of the search it came from. The next page
 * is every match strictly after that position (keyset paging). A response's created_at and survey
 * never change (store.ts keeps the first stored ones), so responses and versions written meanwhile
 * never shift the position: no duplicate and no gap over any number of pages. A response written
 * meanwhile with a created_at after the position shows on a later page; one before it does not.
 * Opaque to clients (base64url JSON). A cursor from a search with another organization, surveys,
 * filters or range is a 400: its position means nothing there.
 */
import { createHash } from 'node:crypto';
import { invalid } from '../errors.ts';
import type { Scope } from './compile.ts';

export interface ResponsePosition {
  /** DateTime64(6) text, as the engine prints it. */
  createdAt: string;
  id: string;
}

/** Which search a cursor belongs to: organization, surveys, filters and range (not size or offset). */
export function searchFingerprint(scope: Scope): string {
  const what = JSON.stringify([scope.orgId, scope.surveyIds, scope.filtersBool, scope.filters, scope.range?.start ?? null, scope.range?.end ?? null]);
  return createHash('sha256').update(what).digest('base64url').slice(0, 22);
}

export function encodeCursor(position: ResponsePosition, scope: Scope): string {
  return Buffer.from(JSON.stringify({ c: position.createdAt, i: position.id, f: searchFingerprint(scope) })).toString('base64url');
}

const DATETIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}$/;
const UUID = /^[\da-f]{8}(?:-[\da-f]{4}){3}-[\da-f]{12}$/i;

export function decodeCursor(cursor: string, scope: Scope): ResponsePosition {
  let parsed: { c?: unknown; i?: unknown; f?: unknown } | undefined;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const ok =
    parsed !== null && typeof parsed === 'object' &&
    typeof parsed.c === 'string' && DATETIME.test(parsed.c) &&
    typeof parsed.i === 'string' && UUID.test(parsed.i);
  if (!ok) throw invalid('cursor is not a cursor this service returned', [{ path: 'cursor', message: 'not a valid cursor' }]);
  if (parsed!.f !== searchFingerprint(scope)) {
    throw invalid('cursor belongs to a search with other surveys, filters or range: send the survey ids, filters_bool, filters and range of the search that returned it', [
      { path: 'cursor', message: 'does not match this search' },
    ]);
  }
  return { createdAt: parsed!.c as string, id: (parsed!.i as string).toLowerCase() };
}
