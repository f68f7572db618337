-- Exactly-once ingestion by message_id: within one organization, an item whose message_id was
-- stored less than 7 days earlier (by received_at) is not stored again. The protocol and its
-- guarantees: docs/architecture.md ("Claims: exactly once by message_id").
--
-- events.message_id: the sender's id, kept on the event row for reads; '' when the item had none
-- (such items are stored every time they are sent).
ALTER TABLE events ADD COLUMN IF NOT EXISTS message_id String CODEC(ZSTD(1));

-- event_message_ids: the narrow claim table of message ids, filled by the view below. Superseded:
-- schema/060 drops both, the events being their own claims (events.message_key).
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
