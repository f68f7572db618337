-- Events: one wide row per received event item, every type in one table.
--
-- Engine: plain MergeTree. Events are immutable facts, appended once; nothing is replaced.
--
-- Reads: (a) one organization over a time range, usually narrowed to a type / event name and
-- counted or bucketed by time; (b) one user's timeline within an organization.
-- Sorting key (org_id, toDate(timestamp), type, event_name, user_id, timestamp): the org and day
-- prefix prunes (a) to the organization and the days asked for (ClickHouse derives the day bound
-- from a condition on `timestamp`, toDate being monotonic); type and event_name next keep one kind
-- of event contiguous within a day, so a per-event-name count reads only its granules; user_id
-- then clusters a user's events of one day. (b) is served by the bloom_filter skip index on
-- user_id, which skips the granules of a time range that cannot hold that user.
-- Partitions by month of `timestamp`: range reads drop whole months, and since a stored timestamp
-- is never more than 7 days before reception an insert touches at most two partitions.
--
-- Columns: every type-specific field is a plain column, '' when the type does not carry it (and
-- the nil UUID for group_id): no Nullable overhead, and empty strings compress to nearly nothing.
-- LowCardinality on strings with few distinct values per table (type, names, locale, timezone,
-- group_type, agent_id, rating fields). ZSTD on the long free text (properties JSON, url, prompt,
-- response). Delta+ZSTD on timestamp, which is sorted within each key prefix.
-- `seq` is the item's index in its request; with received_at it orders events of equal timestamp
-- (see the version of the derived tables below).
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
--
-- Engine: ReplacingMergeTree(version), keyed (org_id, user_id, key): one row per property after
-- merges; read with FINAL (or argMax by version) to see exactly one. No partitioning: replacing
-- only happens within a partition, and a property's versions span any time.
-- `value` is the raw JSON text of the value ('"pro"', '42', '{"a":1}', 'null').
--
-- version: UInt128 = event time (ms) << 64 | received_at (ms) << 16 | seq. The later event time
-- wins, as the spec asks; for equal event times the later received request wins, and within one
-- request the later item (items without a timestamp all get the same reception time). Only a tie
-- of all three (two requests received in the same millisecond) falls back to the engine's
-- "last inserted" rule.
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
--
-- Engine: ReplacingMergeTree(version, is_deleted), keyed (org_id, user_id, group_id): an assign
-- writes is_deleted = 0, an unassign is_deleted = 1; the row of the highest version wins and, when
-- it is a deletion, FINAL returns nothing for that pair. So assign then unassign leaves no
-- membership. Sorted by user first: the common read is "the groups of this user" (e.g. when a
-- survey response records its respondent's groups); the bloom filter on group_id helps the
-- reverse read ("members of this group"). No partitioning, as for user_properties.
-- version: the same UInt128 as user_properties.
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
