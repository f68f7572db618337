-- Idempotency-Key of POST /1.0/release and POST /1.0/survey/response (issue 11): the first answer
-- of a key, replayed to retries of the same body for 24 hours. How it is used:
-- src/idempotency/store.ts; the guarantees: README.md.
--
-- One row per claim (`state` 'pending': a request with this key is running), one per answer
-- (`state` 'done': its status and body) and one per withdrawn claim (`state` 'withdrawn': the
-- request failed, or lost the race below). Rows are only appended, never updated or deleted (so the
-- same statements work through a Distributed table in cluster mode): a request reads every row of
-- its (org_id, endpoint, key) and interprets them (the answer, else the first live claim). Two instances claiming the same key at once both append a claim; the claim with the
-- lowest `_block_number` (the number the engine gives each INSERT's part when it commits it, under
-- its parts lock, kept by merges: enable_block_number_column) wins, the other withdraws. Each
-- claimant reads after its own claim committed, so the loser always sees the winner
-- (the same rule as event_message_ids, schema/010). In cluster mode block numbers are per shard and
-- not read through the Distributed table: claims are ordered by (created_at, claim_id) there, which
-- every reader agrees on but which is not commit order (README says what that leaves).
--
-- Keys: ORDER BY (org_id, endpoint, key): every read is one key of one organization and endpoint,
-- a point lookup; small granules (256) since every read wants a handful of rows. `key` is the
-- header's value itself (1..255 printable ASCII characters, checked by the service), so nothing
-- can collide. `body_hash` (SHA-256 of the parsed body) tells a retry from another request
-- reusing the key.
-- TTL: daily partitions, dropped whole once every row is more than 2 days old (reads only consider
-- the last 24 hours).
CREATE TABLE IF NOT EXISTS idempotency_keys
(
    org_id      UUID,
    endpoint    LowCardinality(String),
    key         String,
    claim_id    UUID,
    state       Enum8('pending' = 1, 'done' = 2, 'withdrawn' = 3),
    body_hash   String,
    status      UInt16,
    response    String CODEC(ZSTD(3)),
    created_at  DateTime64(3, 'UTC')
)
ENGINE = MergeTree
PARTITION BY toYYYYMMDD(created_at)
ORDER BY (org_id, endpoint, key)
TTL toDateTime(created_at) + INTERVAL 2 DAY
SETTINGS index_granularity = 256, enable_block_number_column = 1, ttl_only_drop_parts = 1;
