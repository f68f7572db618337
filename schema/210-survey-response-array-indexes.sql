-- Text (inverted) indexes over two array columns whose filters are exact element tests, so that a
-- search's count reads the index's postings instead of the arrays (src/responses/compile.ts):
--   - hf_pair_items over hf_pairs (schema/004: one `key NUL tag text` element per hidden-field
--     entry): the hidden-field eq / in filters are has(hf_pairs, <pair>);
--   - segment_items over the respondent's segments as UUID texts: the respondent_segments
--     eq / in filters are has / hasAny(arrayMap(g -> toString(g), group_ids), ...), the index's
--     own expression (the engine matches a filter to an index by its expression).
-- The `array` tokenizer makes each element one token, so has() / hasAny() of a constant are
-- answered from the postings exactly: the engine reads a per-row match flag from the index in
-- place of the column ("direct read"), which holds under FINAL too, since the flag is per stored
-- row and FINAL then keeps the newest version of each response as it does for any column.
-- Parts without the index (before the MATERIALIZE below is done) are read the plain way: the
-- answer is the same.
ALTER TABLE survey_responses ADD INDEX IF NOT EXISTS hf_pair_items hf_pairs TYPE text(tokenizer = 'array');

ALTER TABLE survey_responses ADD INDEX IF NOT EXISTS segment_items arrayMap(g -> toString(g), group_ids) TYPE text(tokenizer = 'array');

ALTER TABLE survey_responses MATERIALIZE INDEX hf_pair_items;

ALTER TABLE survey_responses MATERIALIZE INDEX segment_items;
