\echo Use "ALTER EXTENSION threadmem_search UPDATE TO '1.1'" to load this file. \quit

-- Back to 1.1's catalogue: the function keeps the server's code (junctions
-- included), but threadmem reads the version as "a token index here may lack
-- junctions" and leaves it unused (threadmem/search/literal/dialects.py).
COMMENT ON FUNCTION threadmem_tokens(text) IS NULL;
