-- The respondent's aliases that are not the canonical text of a UUID (36 characters, lower-case
-- hex digits and dashes, as toString(UUID) prints one), in their order, computed by the engine at
-- insert (MATERIALIZED: writers never send it), for the alias filters (src/responses/compile.ts):
--   - `contains` of a value holding an ASCII character other than a hex digit (either case) or
--     `-` can only match an alias that is not such a text, so it tests this column with the same
--     function (positionCaseInsensitiveUTF8 on each element), not every alias;
--   - eq / in of values none of which is such a text: has / hasAny on this column.
-- Any other value reads respondent_aliases as before. Same answers: an alias left out of this
-- column is a UUID text, which neither contains such a value nor equals it.
-- Why: a response's aliases are often its respondent id as text beside a customer-side name or
-- email; the name is what people search, and reading the UUID texts was half of the bytes of
-- every alias search (bench/query/README.md, "respondent alias contains").
ALTER TABLE survey_responses
    ADD COLUMN IF NOT EXISTS alias_texts Array(String) MATERIALIZED arrayFilter(a -> toString(toUUIDOrZero(a)) != a, respondent_aliases);

ALTER TABLE survey_responses MATERIALIZE COLUMN alias_texts;
