\echo Use "ALTER EXTENSION threadmem_search UPDATE TO '1.1'" to load this file. \quit

-- A field's lexemes (each run of ASCII letters and digits, lowered, cut to 32
-- bytes; each two runs in a row as 'first|second') as a tsvector without
-- positions: what the token indexes of threadmem's migration 0014 hold. Costly to the planner, so it reads the
-- index instead of computing this for every row.
CREATE FUNCTION threadmem_tokens(text) RETURNS tsvector
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000;
