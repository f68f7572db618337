-- Event reads: three projections of `events` in place of the event_hours projection of
-- schema/090. Like it, each is computed by the engine at INSERT from the
-- columns the write path already sends, merged with its part, and rebuilt in the parts a user
-- deletion touches (lightweight_mutation_projection_mode = 'rebuild', schema/090): no read ever
-- sees a deleted user's events in one and not in the rows. What reads them: src/events/read/
-- (hours.ts, user-weeks.ts); what they cost per INSERT and on disk: bench/events/README.md.
--
-- 1. event_counts: the events counted per (organization, hour, type, event_name, anonymous): the
--    counts of event_hours, with the anonymous events apart (each has its own user id, so unique
--    users count them from here).
ALTER TABLE events ADD PROJECTION IF NOT EXISTS event_counts
    (SELECT org_id, toStartOfHour(timestamp), type, event_name, anonymous, count() GROUP BY org_id, toStartOfHour(timestamp), type, event_name, anonymous);

ALTER TABLE events MATERIALIZE PROJECTION event_counts;

ALTER TABLE events DROP PROJECTION IF EXISTS event_hours;

-- 2. event_times: the columns the partial hours need, ordered by (org_id, timestamp). The table
--    is ordered by day then type, event name and user, so the events of one hour are spread over
--    every granule of their day; here they are a few contiguous granules (of 1024 rows: an hour
--    of a large organization is a few thousand events), found by the primary key.
ALTER TABLE events ADD PROJECTION IF NOT EXISTS event_times
    (SELECT org_id, timestamp, type, event_name, user_id, anonymous ORDER BY org_id, timestamp)
    WITH SETTINGS (index_granularity = 1024);

ALTER TABLE events MATERIALIZE PROJECTION event_times;

-- 3. event_user_weeks: per (organization, week, known user), the hours of the week with an event
--    of that user, a 168-bit mask (bit h: hour h of the week; weeks and hours from the Unix epoch,
--    UTC). One row per active user and week instead of one per event. Anonymous events all fall
--    into one row per week (the nil user): each has its own random user id, and unique users
--    count them from event_counts instead.
ALTER TABLE events ADD PROJECTION IF NOT EXISTS event_user_weeks
    (SELECT org_id, anonymous, intDiv(toUnixTimestamp(timestamp), 604800), if(anonymous = 1, toUUID('00000000-0000-0000-0000-000000000000'), user_id),
        groupBitOr(bitShiftLeft(toUInt256(1), intDiv(toUnixTimestamp(timestamp), 3600) % 168))
     GROUP BY org_id, anonymous, intDiv(toUnixTimestamp(timestamp), 604800), if(anonymous = 1, toUUID('00000000-0000-0000-0000-000000000000'), user_id));

ALTER TABLE events MATERIALIZE PROJECTION event_user_weeks;
