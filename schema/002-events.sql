-- Events: one wide row per received event item, every type in one table, appended once and never
-- replaced (MergeTree).
-- Sorting key (org_id, toDate(timestamp), type, event_name, user_id, timestamp): reads are one
-- organization over a time range, usually one type / event name; the bloom filter on user_id
-- serves one user's timeline. Monthly partitions: a stored timestamp is never more than 7 days
-- before reception, so an INSERT touches at most two partitions. A type-specific field is '' (the
-- nil UUID for group_id) when the type does not carry it: no Nullable. `seq` is the item's index in
-- its request; with received_at it orders events of equal timestamp (the derived tables' version).
-- Why these keys: docs/architecture.md ("Why these engines and keys").
CREATE TABLE IF NOT EXISTS events
(
    org_id              UUID,
    timestamp           DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    type                LowCardinality(String),
    event_name          LowCardinality(String),
    user_id             UUID,
    event_id            UUID,
    user_alias          String CODEC(ZSTD(1)),
    anonymous           UInt8,
    received_at         DateTime64(3, 'UTC') CODEC(ZSTD(1)),
    seq                 UInt16,
    properties          String CODEC(ZSTD(3)),
    context_locale      LowCardinality(String),
    context_timezone    LowCardinality(String),
    group_id            UUID,
    group_type          LowCardinality(String),
    group_name          String CODEC(ZSTD(1)),
    url                 String CODEC(ZSTD(3)),
    screen_name         LowCardinality(String),
    agent_id            LowCardinality(String),
    conversation_id     String CODEC(ZSTD(1)),
    copilot_session_id  String CODEC(ZSTD(1)),
    prompt              String CODEC(ZSTD(3)),
    response            String CODEC(ZSTD(3)),
    rating              LowCardinality(String),
    rating_scale        LowCardinality(String),
    INDEX idx_user_id user_id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(timestamp)
ORDER BY (org_id, toDate(timestamp), type, event_name, user_id, timestamp);

-- User properties: the latest value of each property of each user, set by `identify` events.
-- Invariant: one visible row per (org_id, user_id, key) with FINAL (or argMax by version), the
-- highest version: UInt128 = event time (ms) << 64 | received_at (ms) << 16 | seq. The later event
-- time wins, as the spec asks; for equal event times the later received request, then the later
-- item of one request; only a tie of all three falls back to the engine's "last inserted" rule.
-- Not partitioned: replacing happens within a partition, and a property's versions span any time.
-- `value` is the raw JSON text of the value ('"pro"', '42', '{"a":1}', 'null').
CREATE TABLE IF NOT EXISTS user_properties
(
    org_id      UUID,
    user_id     UUID,
    key         LowCardinality(String),
    value       String CODEC(ZSTD(3)),
    updated_at  DateTime64(3, 'UTC'),
    version     UInt128
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (org_id, user_id, key);

-- Group memberships: the current membership of each user in each group.
-- Invariant: the row of the highest version of (org_id, user_id, group_id) wins, and when it is an
-- unassign (is_deleted = 1) FINAL returns nothing for the pair: assign then unassign leaves no
-- membership. Sorted by user (the groups of a user); the bloom filter on group_id serves the
-- members of a group. version: the same UInt128 as user_properties.
CREATE TABLE IF NOT EXISTS group_memberships
(
    org_id      UUID,
    user_id     UUID,
    group_id    UUID,
    group_type  LowCardinality(String),
    group_name  String,
    updated_at  DateTime64(3, 'UTC'),
    version     UInt128,
    is_deleted  UInt8,
    INDEX idx_group_id group_id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree(version, is_deleted)
ORDER BY (org_id, user_id, group_id);

-- Derived tables are written by the same INSERT into `events` (one insert per flush): each
-- materialized view transforms the inserted block and writes to its target table.
-- identify -> one row per top-level key of `properties` (empty properties -> no row).
CREATE MATERIALIZED VIEW IF NOT EXISTS user_properties_mv TO user_properties AS
SELECT
    org_id,
    user_id,
    kv.1 AS key,
    kv.2 AS value,
    timestamp AS updated_at,
    bitShiftLeft(toUInt128(toUnixTimestamp64Milli(timestamp)), 64)
        + bitShiftLeft(toUInt128(toUnixTimestamp64Milli(received_at)), 16)
        + toUInt128(seq) AS version
FROM events
ARRAY JOIN JSONExtractKeysAndValuesRaw(properties) AS kv
WHERE type = 'identify';

-- group.assign / group.unassign -> one membership row; unassign is a deletion.
CREATE MATERIALIZED VIEW IF NOT EXISTS group_memberships_mv TO group_memberships AS
SELECT
    org_id,
    user_id,
    group_id,
    group_type,
    group_name,
    timestamp AS updated_at,
    bitShiftLeft(toUInt128(toUnixTimestamp64Milli(timestamp)), 64)
        + bitShiftLeft(toUInt128(toUnixTimestamp64Milli(received_at)), 16)
        + toUInt128(seq) AS version,
    toUInt8(type = 'group.unassign') AS is_deleted
FROM events
WHERE type IN ('group.assign', 'group.unassign');
