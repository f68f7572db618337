/**
 * Survey search cursors: the position of the last response of a page in the search order
 * (created_at, id, both descending), plus a fingerprint of the search it came from
 * (src/query/cursor.ts). The next page is every match strictly after that position (keyset
 * paging). A response's created_at and survey never change (store.ts keeps the first stored
 * ones), so responses and versions written meanwhile never shift the position: no duplicate and
 * no gap over any number of pages. A response written meanwhile with a created_at after the
 * position shows on a later page; one before it does not. A cursor from a search with another
 * organization, surveys, filters or range is a 400: its position means nothing there.
 */
import { decodeOpaqueCursor, encodeOpaqueCursor, searchFingerprint } from '../query/cursor.ts';
import { UUID_PATTERN } from '../uuid.ts';
import type { ResponseSelection } from './compile.ts';
import type { ResponsePosition } from './search-sql.ts';

/** Organization, surveys, filters and range (not size or offset). */
const fingerprintOf = (selection: ResponseSelection) =>
  searchFingerprint([selection.orgId, selection.surveyIds, selection.filtersBool, selection.filters, selection.range?.start ?? null, selection.range?.end ?? null]);

export function encodeCursor(position: ResponsePosition, selection: ResponseSelection): string {
  return encodeOpaqueCursor({ c: position.createdAt, i: position.id }, fingerprintOf(selection));
}

const DATETIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}$/;

export function decodeCursor(cursor: string, selection: ResponseSelection): ResponsePosition {
  const p = decodeOpaqueCursor(
    cursor,
    fingerprintOf(selection),
    (x) => typeof x.c === 'string' && DATETIME.test(x.c) && typeof x.i === 'string' && UUID_PATTERN.test(x.i),
    'survey ids, filters_bool, filters and range',
  );
  return { createdAt: p.c as string, id: (p.i as string).toLowerCase() };
}
