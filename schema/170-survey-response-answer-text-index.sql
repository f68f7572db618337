-- A text (inverted) index over answer_text, for the `raw` keyword filter (src/responses/compile.ts).
-- The filter is a substring match, written as `answer_text LIKE '%<keyword>%'`: the engine answers
-- such a LIKE from the index by scanning the index's token dictionary for the tokens containing
-- the keyword's words, then reads only the rows whose postings hold them, instead of every
-- answer text of the organization's range. The LIKE itself is still evaluated on those rows, so
-- the answer is the substring match whatever the tokens (the index only narrows the rows): a
-- keyword shorter than the engine's minimum pattern length, or matching too many tokens, is
-- answered by the plain scan.
--
-- Invariant: FINAL reads stay exact with a skip index (`use_skip_indexes_if_final_exact_mode`,
-- pinned in src/clickhouse/settings.ts): a granule skipped by the index never hides a newer
-- version of a response whose older version matches.
ALTER TABLE survey_responses ADD INDEX IF NOT EXISTS answer_text_tokens answer_text TYPE text(tokenizer = splitByNonAlpha);

ALTER TABLE survey_responses MATERIALIZE INDEX answer_text_tokens;
