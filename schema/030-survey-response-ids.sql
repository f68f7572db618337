-- The identity of every survey response, one narrow row per id: the arbiter of the write path.
--
-- A response keeps the survey_id and created_at of its first write (they are part of the sorting
-- key of survey_responses, so a version under another identity would be a second row that never
-- collapses; see src/responses/store.ts). The writer used to look the batch's ids up in
-- survey_responses itself: one query per batch reading every id of the org (the id bloom filter
-- cannot skip granules at 1000 random ids), 367 million rows read to write 1 million responses
-- into a 1M org, and growing with the org. Here a batch's ids are point lookups:
--
-- - ORDER BY (org_id, id), index_granularity 256: `org_id = ? AND id IN (1000 ids)` reads at most
--   one 256-row granule per id, whatever the org's size. Rows are 56 bytes (UUID, UUID, UUID,
--   DateTime64), so the primary index stays small (one mark per 256 rows: 20k marks, ~0.6 MiB,
--   for 5M responses). Measured figures are in bench/query/README.md (write throughput into an
--   empty org vs into the 5M org).
-- - MergeTree, not ReplacingMergeTree: rows are only inserted for ids not found (insert-if-absent),
--   so duplicates exist only when two writers raced on the first write of one id, and both are
--   kept so that the FIRST one can win (a ReplacingMergeTree keeps the last).
--
-- The race between service processes (two first writes of one id, different created_at, at the
-- same moment): each writer inserts its claim here, then reads the id back and uses the claim
-- with the smallest `_block_number`. A non-replicated MergeTree gives an insert its block number
-- when the part is committed, atomically with making it visible (MergeTreeData::
-- renameTempPartAndReplace), so block order is commit order: whoever reads after its own commit
-- sees every earlier claim, and both writers end on the same, first-committed identity; the
-- second writer's row then has the same sorting key and collapses with the first one.
-- enable_block_number_column keeps `_block_number` through merges (it is otherwise a property
-- of the part, lost when parts merge). This holds on one ClickHouse server (the embedded engine,
-- or the docker-compose server); a ReplicatedMergeTree allocates block numbers before commit, so a
-- replicated deployment would need another arbiter.
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
-- block wins and they agree); a rerun after an interrupted migration only adds such duplicates.
-- An id that the old multi-process race did store under two identities gets two claims here; the
-- first block of this backfill decides which identity later writes keep.
INSERT INTO survey_response_ids (org_id, id, survey_id, created_at)
SELECT org_id, id, survey_id, created_at FROM survey_responses;
