-- Unique users from bitmaps of dense user numbers (schema/230; src/events/read/user-hours.ts).
--
-- 1. event_user_hours: per (organization, hour), the events, a roaring bitmap of the known users'
--    numbers and the count of anonymous events (each is a user of its own). The whole hours of a unique-users
--    read OR these bitmaps instead of hashing every event's 16-byte user id. An aggregate
--    projection: the engine keeps it through inserts and merges, and rebuilds it in the parts a
--    user deletion touches (lightweight_mutation_projection_mode = 'rebuild', schema/090), so a
--    deleted user leaves the hours' bitmaps with its events. The -State form: a read merges the
--    whole hours' states with the partial hours' (the engine serves `groupBitmapStateIf` from it).
ALTER TABLE events ADD PROJECTION IF NOT EXISTS event_user_hours
    (SELECT org_id, toStartOfHour(timestamp), count(), groupBitmapStateIf(user_num, anonymous = 0), countIf(anonymous = 1) GROUP BY org_id, toStartOfHour(timestamp));

ALTER TABLE events MATERIALIZE PROJECTION event_user_hours;

-- 2. event_times (schema/180) with the number, for the partial hours of the same reads. Dropped
--    and added again: until a part's projection is rebuilt, its partial hours are read from its
--    rows (same answer).
ALTER TABLE events DROP PROJECTION IF EXISTS event_times;

ALTER TABLE events ADD PROJECTION IF NOT EXISTS event_times
    (SELECT org_id, timestamp, type, event_name, user_id, user_num, anonymous ORDER BY org_id, timestamp)
    WITH SETTINGS (index_granularity = 1024, min_compress_block_size = 4096);

ALTER TABLE events MATERIALIZE PROJECTION event_times;
