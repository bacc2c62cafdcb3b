-- Every command updates its match's match_summaries row (hand, tokens,
-- last_version, updated_at) in the append's statement. updated_at was indexed
-- (match_summaries_status on (status, updated_at DESC)), so no such update could
-- be HOT (heap-only): each wrote a new tuple into all five indexes of the table.
-- Now no index holds a column a command changes (status changes only at the end),
-- and the pages keep room for the row's next version (fillfactor), so a
-- command's update stays on its page and touches no index. The match list's
-- ORDER BY updated_at sorts the rows its filter finds (by ladder, player or
-- status: each still indexed) instead of walking that index.
DROP INDEX IF EXISTS match_summaries_status;
CREATE INDEX match_summaries_status ON match_summaries (status);
ALTER TABLE match_summaries SET (fillfactor = 70);
