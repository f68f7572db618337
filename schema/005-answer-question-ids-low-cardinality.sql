-- Answer question ids as LowCardinality: an organization has a few hundred questions, and every
-- answer aggregation (group_by `answer`) filters each response's answers by question id, so the
-- column read shrinks several times (bench/query/README.md, "Figures behind the schema and the
-- code"). ans_values stays Array(String): free-text values can be of any cardinality.
-- A metadata change plus a background mutation of this one column; parts not yet rewritten are
-- converted when read.
ALTER TABLE survey_responses MODIFY COLUMN ans_question_ids Array(LowCardinality(String));
