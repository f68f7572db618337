-- Unique users by date bucket read the rows again: the event_user_weeks projection of schema/091
-- (per organization, week and known user, a 168-bit mask of the week's hours) took more engine CPU
-- to answer than hashing the rows' user ids (OR-ing the masks of every user-week row per user),
-- and cost its aggregation at every INSERT and merge and its rows on disk. The figures:
-- bench/events/README.md.
ALTER TABLE events DROP PROJECTION IF EXISTS event_user_weeks;
