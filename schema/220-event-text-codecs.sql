-- The text columns of `events` compressed with LZ4 (the engine's default) in place of ZSTD. Every
-- INSERT compresses its rows, and every merge decompresses and compresses them again, at each
-- level: with ZSTD that was the largest per-row cost of the engine that the reads do not need
-- (LZ4 also decompresses faster). The price is disk: what it saves and costs, measured,
-- bench/ingest/README.md. A codec change applies to the parts written from now on (INSERTs and
-- merges); existing parts keep theirs until they are merged.
ALTER TABLE events
    MODIFY COLUMN user_alias CODEC(LZ4),
    MODIFY COLUMN properties CODEC(LZ4),
    MODIFY COLUMN group_name CODEC(LZ4),
    MODIFY COLUMN url CODEC(LZ4),
    MODIFY COLUMN conversation_id CODEC(LZ4),
    MODIFY COLUMN copilot_session_id CODEC(LZ4),
    MODIFY COLUMN prompt CODEC(LZ4),
    MODIFY COLUMN response CODEC(LZ4);
