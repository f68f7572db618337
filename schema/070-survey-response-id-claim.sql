-- Which write made a claim of survey_response_ids (src/responses/identity.ts on the claims module,
-- src/claims/claims.ts): a UUID per write batch. The writer reads the claims committed after its
-- in-memory view's watermark and tells its own part from the others' by it, so that a batch's new
-- ids need no lookup (the view says they were never claimed) and no read back (only the claims
-- other writers committed meanwhile are read). Claims written before: the nil UUID.
ALTER TABLE survey_response_ids ADD COLUMN IF NOT EXISTS claim UUID;
