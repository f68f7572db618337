-- The response's four times stored with T64 before LZ4.
-- T64 transposes each block of 64 values by bit and drops the bits every value of the block
-- shares, so microsecond times of one survey's responses (ordered by created_at, and the other
-- three within minutes of it) keep only their low-order bits: 7.5 -> 4.3-5.7 MB per column per
-- 1M responses, where LZ4 alone found almost nothing to compress in 8-byte times. Reads that scan
-- a time column (date histograms over the rows, the newest page's sort) decode it as fast or
-- faster: fewer bytes leave the page cache (figures: bench/query/README.md).
-- Only the codec changes, so this is metadata: parts written from now on use it, and existing
-- parts take it when a merge rewrites them (`OPTIMIZE TABLE survey_responses FINAL` rewrites
-- them at once; the service does not, as that is a whole-table rewrite at start).
ALTER TABLE survey_responses
    MODIFY COLUMN created_at DateTime64(6, 'UTC') CODEC(T64, LZ4),
    MODIFY COLUMN updated_at DateTime64(6, 'UTC') CODEC(T64, LZ4),
    MODIFY COLUMN ended_at Nullable(DateTime64(6, 'UTC')) CODEC(T64, LZ4),
    MODIFY COLUMN last_answer_at Nullable(DateTime64(6, 'UTC')) CODEC(T64, LZ4);
