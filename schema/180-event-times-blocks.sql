-- event_times (schema/091) again, its columns compressed a granule at a time. The partial hours
-- of a read (src/events/read/hours.ts) are a few granules of 1024 rows per hour and part; the
-- engine's default compressed block (64 KiB and more) holds 8 granules of `timestamp`, so
-- reading the granules of one hour decompressed about 8 times the rows it needed. With blocks of
-- at least 4 KiB a granule of the 8- and 16-byte columns is its own block (the 1-byte columns
-- still share one among 4 granules); on disk it costs about as much (bench/events/README.md).
-- Same columns, same order: the INSERT sorts and writes the same rows.
-- Dropped and added again under the same name: until a part's projection is rebuilt by the
-- MATERIALIZE below, reads of that part's partial hours use its rows (the answer is the same).
ALTER TABLE events DROP PROJECTION IF EXISTS event_times;

ALTER TABLE events ADD PROJECTION IF NOT EXISTS event_times
    (SELECT org_id, timestamp, type, event_name, user_id, anonymous ORDER BY org_id, timestamp)
    WITH SETTINGS (index_granularity = 1024, min_compress_block_size = 4096);

ALTER TABLE events MATERIALIZE PROJECTION event_times;
