-- Deleted survey responses (src/responses/delete.ts): one tombstone per deleted id.
--
-- Invariant: a version whose updated_at is not after its id's deleted_at is never stored again
-- (the writer checks before its INSERT, and again after it for a deletion that ran meanwhile in
-- another process). The rows themselves go by lightweight DELETE on survey_responses and
-- survey_response_ids. A version with a later updated_at is a new response.
-- The protocol: docs/architecture.md ("Writing survey responses").
CREATE TABLE IF NOT EXISTS survey_response_tombstones
(
    org_id      UUID,
    id          UUID,
    deleted_at  DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(deleted_at)
ORDER BY (org_id, id)
SETTINGS index_granularity = 256;
