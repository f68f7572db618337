-- Idempotency-Key of POST /1.0/release and POST /1.0/survey/response: the first answer of a key,
-- replayed to retries of the same body for 24 hours (src/idempotency/store.ts; the protocol:
-- docs/architecture.md, "Idempotency-Key").
--
-- Invariant: rows are only appended, never updated or deleted (so the same statements work through
-- a Distributed table): one per claim (`pending`: a request with this key is running), one per
-- answer (`done`: its status and body), one per withdrawn claim (`withdrawn`: the request failed,
-- or lost the race). Of several claims of one key, the lowest `_block_number` wins (the claims
-- rule, src/claims/claims.ts: block order is commit order on one server, and
-- enable_block_number_column keeps the number through merges); in cluster mode, where block
-- numbers are per shard, claims are ordered by (created_at, claim_id), which every reader agrees
-- on but which is not commit order.
-- ORDER BY (org_id, endpoint, key), granules of 256: every read is one key, a handful of rows.
-- `key` is the header's value itself (1..255 printable ASCII characters), so nothing can collide;
-- `body_hash` (SHA-256 of the parsed body) tells a retry from another request reusing the key.
-- Daily partitions dropped whole once every row is more than 2 days old; reads only consider the
-- last 24 hours.
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
