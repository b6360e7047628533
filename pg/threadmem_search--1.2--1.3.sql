\echo Use "ALTER EXTENSION threadmem_search UPDATE TO '1.3'" to load this file. \quit

-- threadmem_tokens(text)'s junction is now '^' || the second run's first four
-- || '|' || the first run's last six at most, reversed ('^refu|noitce' for
-- "connection refused", where 1.2 had '^tion|refu'): "function refused" no
-- longer shares it. The function's signature is unchanged; a token index built
-- with 1.2 holds the old junctions, and threadmem's migration 0017 rebuilds it.
COMMENT ON FUNCTION threadmem_tokens(text) IS
    'threadmem: a field''s runs, pairs of runs (forward and reversed) and junctions (second run first), for the token index';
