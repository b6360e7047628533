\echo Use "CREATE EXTENSION threadmem_search" to load this file. \quit

CREATE FUNCTION threadmem_icontains(text, text) RETURNS boolean
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION threadmem_ipos(text, text) RETURNS integer
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION threadmem_iwindow(text, text, integer, integer) RETURNS text
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION threadmem_contains_pattern(text, text) RETURNS boolean
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR ~~~ (
    LEFTARG = text, RIGHTARG = text, FUNCTION = threadmem_contains_pattern,
    RESTRICT = iclikesel, JOIN = iclikejoinsel
);

CREATE OPERATOR CLASS threadmem_trgm_ops FOR TYPE text USING gin AS
    OPERATOR 3 pg_catalog.~~ (text, text),
    OPERATOR 4 ~~~ (text, text),
    OPERATOR 6 pg_catalog.~* (text, text),
    FUNCTION 1 btint4cmp (int4, int4),
    FUNCTION 2 gin_extract_value_trgm (text, internal),
    FUNCTION 3 gin_extract_query_trgm (text, internal, int2, internal, internal, internal, internal),
    FUNCTION 4 gin_trgm_consistent (internal, int2, text, int4, internal, internal, internal, internal),
    FUNCTION 6 gin_trgm_triconsistent (internal, int2, text, int4, internal, internal, internal),
    STORAGE int4;
