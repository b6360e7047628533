\echo Use "ALTER EXTENSION threadmem_search UPDATE TO '2.0'" to load this file. \quit

-- threadmem_tokens(text) now gives each run and, for each two runs in a row,
-- one link (the first's last six bytes reversed, '|', the second's first
-- four) in place of 1.3's forward pair, reversed pair and junction: about half
-- the lexemes. The signature is unchanged; a token index built with 1.3 holds
-- the old lexemes, and threadmem's migration 0022 rebuilds it before this step.
COMMENT ON FUNCTION threadmem_tokens(text) IS 'threadmem: a field''s runs and the links of each two in a row, for the token index';
