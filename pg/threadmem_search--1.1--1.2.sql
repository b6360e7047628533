\echo Use "ALTER EXTENSION threadmem_search UPDATE TO '1.2'" to load this file. \quit

-- threadmem_tokens(text) also gives, for each two runs in a row of at least
-- four bytes each, the junction '^' || the first's last four || '|' || the
-- second's first four: what a term of two runs open at both ends asks of a
-- field. The function's signature is unchanged; a token index built with 1.1
-- lacks the junctions, and threadmem's migration 0015 rebuilds it.
COMMENT ON FUNCTION threadmem_tokens(text) IS
    'threadmem: a field''s runs, pairs of runs (forward and reversed) and junctions, for the token index';
