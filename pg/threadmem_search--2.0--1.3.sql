\echo Use "ALTER EXTENSION threadmem_search UPDATE TO '1.3'" to load this file. \quit

-- Back to 1.3's version, whose token index held other lexemes: threadmem's
-- search leaves a token index unused at that version (the tests step down
-- here to play a store migrated before 2.0). The server's function is 2.0's.
COMMENT ON FUNCTION threadmem_tokens(text) IS 'threadmem: a field''s runs, pairs of runs (forward and reversed) and junctions (second run first), for the token index';
