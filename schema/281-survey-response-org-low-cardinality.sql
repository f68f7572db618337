-- The organization of a response as LowCardinality(UUID). Every survey read tests
-- `org_id = {org:UUID}` on every row it reads (the guarded source), and the primary key only
-- narrows the read to the organization's granules: with a plain UUID that test decompresses and
-- compares 16 bytes a row, 24-32 % of a raw read's engine time (Q4 at 5M, the alias count at 10M).
-- As LowCardinality the test is one compare per dictionary and a small index per row: Q4 -11 to
-- -24 %, the alias count at 10M -14 % (bench/query/README.md, "the per-row organization test").
-- The values and their order are the same, so the engine accepts the change on the sorting key's
-- first column: a metadata change plus a background mutation of this one column; parts not yet
-- rewritten are converted when read (as schema/005). The tenant guard's SQL is unchanged.
ALTER TABLE survey_responses MODIFY COLUMN org_id LowCardinality(UUID);
