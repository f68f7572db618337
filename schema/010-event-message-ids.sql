-- Exactly-once ingestion by message_id (issue 11).
--
-- An event item may carry `message_id` (1..255 characters, chosen by the sender). Within one
-- organization, an item whose message_id was stored less than 7 days earlier (by received_at) is
-- not stored again: same batch, retried batch, retry after a crash between commit and
-- acknowledgement, retry on another service instance of the same database. What the service does
-- with these tables is in src/events/message-ids.ts; what it guarantees is in README.md.
--
-- events.message_id: the sender's id, kept on the event row for reads (issue 14 returns it). ''
-- when the item had none (such items are never deduplicated, as before).
ALTER TABLE events ADD COLUMN IF NOT EXISTS message_id String CODEC(ZSTD(1));

-- event_message_ids: one narrow row per stored event that has a message_id: the claim.
--
-- message_key = MD5(org_id as text || ':' || message_id): one 16-byte key per (organization,
-- message id), so a lookup is one IN over one column and the organization is part of the key by
-- construction (an id of another organization can never match). 128 bits: with 10^9 ids in one
-- organization's window the chance of any collision is ~10^-21.
-- event_id: which stored row holds the claim; when two flushes race on the same message_id, the
-- loser deletes its own rows by this id (see below).
--
-- Written by the materialized view below, in the same INSERT as the events themselves: no flush
-- can store an event and not its claim, or the other way round, by a service crash (the INSERT is
-- one statement; the engine writes the events part and then the view's part).
--
-- Engine and keys, measured on this 2-core machine (contended, load average 7-11) with 10M claims
-- and 2,000 random keys per lookup (engine CPU per looked-up key, from system.query_log):
--   MergeTree ORDER BY (org_id, key), granules of 8192, LZ4:        ~100-250 µs (2.5M rows read
--     for 100 keys: every key reads one whole granule in every part)
--   same, granules of 256:                                           ~140 µs (560 rows per key)
--   ORDER BY key alone, granules of 64, no compression, 4 KiB blocks: ~45-55 µs (64 rows per key)
--   EmbeddedRocksDB (a KV store, point gets):                        ~40-60 µs, and no
--     _block_number, which the race rule below needs; its compaction after 10M rows made queries
--     time out on this machine.
--   Only parsing the parameter array of 2,000 keys:                   ~4.5 µs per key.
-- So: ORDER BY message_key alone, small granules, no compression of random bytes (MD5 and UUIDs do
-- not compress; decompressing a 64 KiB block per looked-up key was most of the cost), small
-- compressed blocks. The lookup cost grows with the number of parts a key must be looked for in,
-- hence weekly partitions (2-3 in the window) rather than daily ones (8).
--
-- Not chosen:
--   - ReplacingMergeTree on events: it replaces rows of equal sorting key only at merges (reads
--     see duplicates until then, or pay FINAL on every read), and a retried item without an
--     explicit timestamp gets a new timestamp, hence another sorting key: never replaced.
--   - insert_deduplication_token / non_replicated_deduplication_window: deduplicates whole
--     blocks of identical content; the group committer puts a retried request into another flush
--     with other requests, so the block differs and nothing is deduplicated.
--
-- Race between instances (or two flushes of one instance). Two flushes can both look a
-- message_id up before either has committed, and both store it. `_block_number`
-- (enable_block_number_column) is the number the engine gives each INSERT's part when it commits
-- it, under its parts lock, so it orders claims by commit, and merges keep it. Rule: of the claims
-- of one message_key, the one with the lowest block number wins. Every flush, after its INSERT,
-- reads the claims of its keys committed after its lookup began (block number above the highest
-- one it could see): a claim of another flush with a lower block number than its own means it
-- lost, and it deletes its own event rows and claims (lightweight DELETE, visible at once) before
-- answering, counting those items as duplicates. The winner's claim committed before the loser's,
-- and the loser reads after its own commit, so a loser always sees the winner: exactly one copy
-- remains. That read is skipped when the highest claim block (system.parts) went from `before` to
-- `before` + 1 across the INSERT: the only claim part committed meanwhile is the flush's own, so no
-- race was possible; with one instance and one INSERT in flight (the default) that is every flush,
-- and the cost of dedup is two system.parts reads and one key lookup per flush.
--
-- TTL: a whole weekly partition is dropped once all its rows are more than 14 days old, so claims
-- live 14 to 21 days (cheap drops, no TTL merges); lookups only count claims received in the last
-- 7 days, so the window is exactly 7 days.
CREATE TABLE IF NOT EXISTS event_message_ids
(
    message_key  FixedString(16) CODEC(NONE),
    org_id       UUID,
    event_id     UUID CODEC(NONE),
    received_at  DateTime64(3, 'UTC')
)
ENGINE = MergeTree
PARTITION BY toMonday(received_at)
ORDER BY message_key
TTL toDateTime(received_at) + INTERVAL 14 DAY
SETTINGS index_granularity = 64, min_compress_block_size = 4096, max_compress_block_size = 4096,
         enable_block_number_column = 1, ttl_only_drop_parts = 1;

CREATE MATERIALIZED VIEW IF NOT EXISTS event_message_ids_mv TO event_message_ids AS
SELECT
    MD5(concat(toString(org_id), ':', message_id)) AS message_key,
    org_id,
    event_id,
    received_at
FROM events
WHERE message_id != '';
