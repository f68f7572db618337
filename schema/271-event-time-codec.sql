-- The events' timestamp stored with T64 before LZ4, in place of Delta then ZSTD(1) (schema/002).
-- Rows are sorted by (org, day, type, name, user, time), so within a block the times of one day
-- are not in order: Delta found little to take out, and ZSTD was most of the cost of decoding
-- them. A read that scans the rows (a property filter over a range, the date histogram of the
-- rows) decoded 10M times in ~150 ms of engine CPU of its ~410; with T64 (each block of 64 values
-- transposed by bit, the bits all its values share dropped: a day's milliseconds keep ~27 of 64)
-- and LZ4 in ~30-40 ms, and the column is smaller (10M events: 44 -> 34 MiB). Figures:
-- bench/events/README.md, 2026-11-27 11:10. The event_times projection keeps its own codec (LZ4).
-- A codec change applies to parts written from now on; the key column cannot be MATERIALIZEd,
-- and the closed months are single parts no merge rewrites again, so every part is rewritten once
-- (as schema/141 did): a one-off background mutation at upgrade, answers unchanged.
ALTER TABLE events MODIFY COLUMN timestamp DateTime64(3, 'UTC') CODEC(T64, LZ4);

ALTER TABLE events REWRITE PARTS;
