\echo Use "CREATE EXTENSION threadmem_search" to load this file. \quit

CREATE FUNCTION threadmem_icontains(text, text) RETURNS boolean
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION threadmem_ipos(text, text) RETURNS integer
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION threadmem_iwindow(text, text, integer, integer) RETURNS text
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- The operators: "the field contains the term of this LIKE pattern ('%<term>%',
-- with \, % and _ escaped; an unescaped % inside stands for nothing and only
-- marks where a word may end), in any ASCII case". The operand is the form
-- pg_trgm's LIKE and ILIKE strategies read trigrams from, so the operator
-- class below reuses pg_trgm's support functions as they are.
--
-- Two operators, one test: they differ only in what the planner is told a
-- test costs. ~~~ is cheap to the planner, like PostgreSQL's own operators:
-- right for the whole store, where the choice is between reading the newest
-- rows until enough match and asking the trigram index. ~~~~ is expensive
-- (it reads a whole field, up to ~60 KB): right for one large thread, which
-- the planner takes for an average one (a few hundred rows, cheap to scan)
-- and would read row by row instead of narrowing with the trigram index.
CREATE FUNCTION threadmem_contains_pattern(text, text) RETURNS boolean
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION threadmem_contains_pattern_costly(text, text) RETURNS boolean
AS 'MODULE_PATHNAME', 'threadmem_contains_pattern' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 10000;

CREATE OPERATOR ~~~ (
    LEFTARG = text, RIGHTARG = text, FUNCTION = threadmem_contains_pattern,
    RESTRICT = iclikesel, JOIN = iclikejoinsel
);

CREATE OPERATOR ~~~~ (
    LEFTARG = text, RIGHTARG = text, FUNCTION = threadmem_contains_pattern_costly,
    RESTRICT = iclikesel, JOIN = iclikejoinsel
);

-- pg_trgm's gin_trgm_ops with the two operators in the places of LIKE and
-- ILIKE (strategies 3 and 4, whose trigrams pg_trgm extracts the same way),
-- and ~* for terms that are not ASCII.
CREATE OPERATOR CLASS threadmem_trgm_ops FOR TYPE text USING gin AS
    OPERATOR 3 ~~~ (text, text),
    OPERATOR 4 ~~~~ (text, text),
    OPERATOR 6 pg_catalog.~* (text, text),
    FUNCTION 1 btint4cmp (int4, int4),
    FUNCTION 2 gin_extract_value_trgm (text, internal),
    FUNCTION 3 gin_extract_query_trgm (text, internal, int2, internal, internal, internal, internal),
    FUNCTION 4 gin_trgm_consistent (internal, int2, text, int4, internal, internal, internal, internal),
    FUNCTION 6 gin_trgm_triconsistent (internal, int2, text, int4, internal, internal, internal),
    STORAGE int4;

-- A field's lexemes as a tsvector without positions (pg/threadmem_tokens.c):
-- each run of ASCII letters and digits, lowered, cut to 32 bytes, and for
-- each two runs in a row their link, the first's last six bytes reversed,
-- '|', the second's first four. What the token indexes hold. Costly to the
-- planner, so it reads the index instead of computing this for every row.
CREATE FUNCTION threadmem_tokens(text) RETURNS tsvector
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000;
COMMENT ON FUNCTION threadmem_tokens(text) IS 'threadmem: a field''s runs and the links of each two in a row, for the token index';
