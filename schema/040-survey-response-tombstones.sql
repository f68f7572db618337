-- Deleted survey responses (DELETE /1.0/survey/response/<id>, DELETE /1.0/respondent/<id>;
-- src/responses/delete.ts). The rows themselves go by lightweight DELETE on survey_responses and
-- survey_response_ids: hidden from every read at once, removed from disk when their parts merge or
-- by the purge that follows a deletion (APPLY DELETED MASK, README "Deleting data").
-- A tombstone keeps a deleted id from coming back through a late or repeated write of a version
-- from before the deletion: the writer drops records whose updated_at is not after deleted_at
-- (checked before its INSERT, and again after it for a deletion that ran meanwhile in another
-- process). A version written with a later updated_at is a new response and is stored.
CREATE TABLE IF NOT EXISTS survey_response_tombstones
(
    org_id      UUID,
    id          UUID,
    deleted_at  DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(deleted_at)
ORDER BY (org_id, id)
SETTINGS index_granularity = 256;
