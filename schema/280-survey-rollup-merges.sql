-- The slice tables merged into one part once their parts are an hour old.
-- Every rollup read is a FINAL read of survey_rollup or survey_rollup_answers (schema/020, 111):
-- with one part the engine reads the slice rows as they are; with several it merges their
-- versions on every read, which costs a read more than its rows do. The background merges can
-- leave a few small parts of the recomputes' writes unmerged for good, as they do for
-- survey_responses (schema/004). Not partition-only: the tables have no partition key, so a
-- whole-partition merge would wait for an hour without any write at all; this way the parts older
-- than an hour merge while the newer ones keep the merges of their level, and a quiet hour
-- rewrites the tables once (merge threads run at a lower priority, src/clickhouse/engine.ts).
-- Figures: bench/query/README.md.
ALTER TABLE survey_rollup MODIFY SETTING min_age_to_force_merge_seconds = 3600, min_age_to_force_merge_on_partition_only = 0;
ALTER TABLE survey_rollup_answers MODIFY SETTING min_age_to_force_merge_seconds = 3600, min_age_to_force_merge_on_partition_only = 0;
