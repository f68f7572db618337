-- The identity of every survey response (its survey_id and created_at, fixed by its first write),
-- one narrow row per claim: the arbiter of the write path (src/responses/identity.ts).
--
-- Invariant: of several claims of one id, the one with the smallest `_block_number` is the
-- identity (the claims rule, src/claims/claims.ts: on one server block order is commit order, and
-- enable_block_number_column keeps the number through merges; a ReplicatedMergeTree allocates
-- block numbers before commit, so a replicated deployment would need another arbiter).
-- MergeTree, not ReplacingMergeTree: claims are inserted only for ids not found, so duplicates
-- exist only when two writers raced on a first write, and both are kept so that the FIRST can win
-- (a ReplacingMergeTree keeps the last). ORDER BY (org_id, id), granules of 256: a batch's ids are
-- point lookups, at most one granule each, whatever the organization's size.
-- The protocol: docs/architecture.md ("Writing survey responses").
CREATE TABLE IF NOT EXISTS survey_response_ids
(
    org_id      UUID,
    id          UUID,
    survey_id   UUID,
    created_at  DateTime64(6, 'UTC')
)
ENGINE = MergeTree
ORDER BY (org_id, id)
SETTINGS index_granularity = 256, enable_block_number_column = 1;

-- Backfill from the responses already stored: every stored version (all of them share their id's
-- identity), streamed without grouping. Duplicates of one identity are harmless (the smallest
-- block wins and they agree), so a rerun after an interrupted migration is safe. An id stored
-- under two identities gets two claims here; the first block of this backfill decides which
-- identity later writes keep.
INSERT INTO survey_response_ids (org_id, id, survey_id, created_at)
SELECT org_id, id, survey_id, created_at FROM survey_responses;
