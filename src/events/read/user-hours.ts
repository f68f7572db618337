/**
 * Unique users from the hours: every known user has a dense number within its organization
 * (src/events/user-numbers.ts, `events.user_num`), and the `event_user_hours` projection of
 * `events` (schema/232) holds per (organization, hour) the events, a roaring bitmap of the known
 * users' numbers and the count of anonymous events (each anonymous event has its own user id:
 * one user each). A read whose levels are all timestamp histograms and whose selection has no
 * filter takes the whole hours from the projection and the partial ones from the rows (the split
 * of hours.ts: the `event_times` projection, which holds the number too), both as bitmap states,
 * merged per bucket and for the ROLLUP's parents: the union of the sets is the exact set of
 * users, as uniqExact over the rows would count it (property test: test/integration/
 * event-user-numbers.test.ts). The engine keeps the projection exact through merges and user
 * deletions (rebuilt in the parts a deletion touches): a deleted user's events leave the bitmaps
 * with the rows.
 */
import type { EventSelection } from './source.ts';

/** Per group: its events `n`, its known users' numbers as a bitmap state, and its anonymous events. */
export const USER_HOURS_AGGREGATES = 'count() AS n, groupBitmapStateIf(user_num, anonymous = 0) AS users, countIf(anonymous = 1) AS anonymous_events';

/** Unique users of a group of `USER_HOURS_AGGREGATES` rows. */
export const USER_HOURS_UNIQUE_USERS = 'groupBitmapMerge(users) + sum(anonymous_events)';

/** The selection can be read from event_user_hours: no filter (the projection has no other column), no cohort. */
export function userHoursServe(selection: EventSelection): boolean {
  return !selection.cohort && selection.filters.length === 0;
}
