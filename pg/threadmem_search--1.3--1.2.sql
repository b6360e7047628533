\echo Use "ALTER EXTENSION threadmem_search UPDATE TO '1.2'" to load this file. \quit

-- Back to 1.2's catalogue: the function keeps the server's code (1.3's
-- junctions), but threadmem reads the version as "a token index here may hold
-- 1.2's junctions" and leaves it unused (threadmem/search/literal/dialects.py).
COMMENT ON FUNCTION threadmem_tokens(text) IS
    'threadmem: a field''s runs, pairs of runs (forward and reversed) and junctions, for the token index';
