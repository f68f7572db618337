-- The respondent's aliases that are not the canonical text of a UUID as one String, computed by
-- the engine at insert (MATERIALIZED: writers never send it), replacing schema/261's alias_texts
-- (the same aliases as an Array(String)), for the alias filters (src/responses/compile.ts):
-- each alias preceded by a NUL and the last one followed by one ("\0a\0b\0"; "\0" without any),
-- in their order, a NUL inside an alias written as the byte 0xFF (never in UTF-8 text), so that a
-- NUL in alias_text always separates two aliases.
--   - `contains` of an ASCII value without NUL: `position(lower(alias_text), lower(value))`, one
--     plain byte search per response instead of positionCaseInsensitiveUTF8 on each element of an
--     array (a value without NUL cannot match across the NUL between two aliases);
--   - `contains` of another value without NUL: alias_text split back into its aliases, each tested
--     with positionCaseInsensitiveUTF8 as before;
--   - eq / in of a value without NUL: `position(alias_text, '\0' || value || '\0')` (multiSearchAny
--     for in).
-- Values a UUID text could match, and values with a NUL, read respondent_aliases as before.
-- Why: a fifth less engine CPU for an alias `contains` at 10M, in as many bytes on disk as
-- alias_texts (bench/query/README.md, "2026-11-27 08:17-09:50, respondent alias contains").
-- alias_texts is dropped: both are computed from respondent_aliases, so nothing is lost.
ALTER TABLE survey_responses
    ADD COLUMN IF NOT EXISTS alias_text String MATERIALIZED concat('\0', arrayStringConcat(arrayConcat(arrayMap(a -> replaceAll(a, '\0', '\xFF'), arrayFilter(a -> toString(toUUIDOrZero(a)) != a, respondent_aliases)), ['']), '\0'));

ALTER TABLE survey_responses MATERIALIZE COLUMN alias_text;

ALTER TABLE survey_responses DROP COLUMN IF EXISTS alias_texts;
