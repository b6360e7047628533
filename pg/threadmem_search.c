/*
 * threadmem_search: case-insensitive literal search for threadmem.
 *
 * PostgreSQL's own tools for "does this field contain this term, in any
 * case, and where" all pay per byte for generality: ~* converts the field
 * to wide characters, lower() copies and converts it, ILIKE does both, and
 * substr() walks to a character position one pg_mblen call at a time.
 * threadmem searches for literal terms, mostly ASCII, in fields of up to
 * ~60,000 characters; these functions do that one job at memchr speed.
 *
 * The needle is an ASCII term; ASCII letters match in either case, every
 * other byte matches itself, exactly as ~* '***=<term>' matches an ASCII
 * term. Positions count characters (UTF-8), 1-based, like strpos.
 */
#include "postgres.h"

#include <string.h>

#include "fmgr.h"
#include "utils/builtins.h"

PG_MODULE_MAGIC;

static inline unsigned char
fold(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

/* The next occurrence of byte c in [p, last], or NULL. */
static inline const char *
next_byte(const char *p, const char *last, unsigned char c)
{
	return p <= last ? memchr(p, c, last - p + 1) : NULL;
}

/*
 * The first occurrence of needle in hay, any ASCII case; NULL when none.
 * Candidates are the occurrences of the needle's first letter in either
 * case, each found by memchr; the next of each case is kept until passed,
 * so every byte is scanned once per case.
 */
static const char *
ifind(const char *hay, size_t hay_len, const char *needle, size_t needle_len)
{
	const char *last;
	const char *next_lower;
	const char *next_upper;
	unsigned char lower,
				upper;

	if (needle_len == 0)
		return hay;
	if (hay_len < needle_len)
		return NULL;
	last = hay + hay_len - needle_len;
	lower = fold((unsigned char) needle[0]);
	upper = (lower >= 'a' && lower <= 'z') ? lower - ('a' - 'A') : lower;
	next_lower = next_byte(hay, last, lower);
	next_upper = lower == upper ? NULL : next_byte(hay, last, upper);
	for (;;)
	{
		const char *at;
		size_t		i;

		if (next_lower == NULL)
			at = next_upper;
		else if (next_upper == NULL)
			at = next_lower;
		else
			at = next_lower < next_upper ? next_lower : next_upper;
		if (at == NULL)
			return NULL;
		for (i = 1; i < needle_len; i++)
			if (fold((unsigned char) at[i]) != fold((unsigned char) needle[i]))
				break;
		if (i == needle_len)
			return at;
		if (at == next_lower)
			next_lower = next_byte(at + 1, last, lower);
		else
			next_upper = next_byte(at + 1, last, upper);
	}
}

/* Characters in the first len bytes of UTF-8 text: the bytes that start one. */
static int32
char_count(const char *s, size_t len)
{
	int32		count = 0;
	size_t		i;

	for (i = 0; i < len; i++)
		count += ((unsigned char) s[i] & 0xC0) != 0x80;
	return count;
}

PG_FUNCTION_INFO_V1(threadmem_icontains);
Datum
threadmem_icontains(PG_FUNCTION_ARGS)
{
	text	   *hay = PG_GETARG_TEXT_PP(0);
	text	   *needle = PG_GETARG_TEXT_PP(1);

	PG_RETURN_BOOL(ifind(VARDATA_ANY(hay), VARSIZE_ANY_EXHDR(hay),
						 VARDATA_ANY(needle), VARSIZE_ANY_EXHDR(needle)) != NULL);
}

PG_FUNCTION_INFO_V1(threadmem_ipos);
Datum
threadmem_ipos(PG_FUNCTION_ARGS)
{
	text	   *hay = PG_GETARG_TEXT_PP(0);
	text	   *needle = PG_GETARG_TEXT_PP(1);
	const char *start = VARDATA_ANY(hay);
	const char *at = ifind(start, VARSIZE_ANY_EXHDR(hay), VARDATA_ANY(needle), VARSIZE_ANY_EXHDR(needle));

	PG_RETURN_INT32(at ? char_count(start, at - start) + 1 : 0);
}

/*
 * threadmem_iwindow(field, needle, lead, width): the characters of field from
 * lead characters before needle's first occurrence (or from the start), at
 * most width of them; NULL when needle does not occur.
 */
PG_FUNCTION_INFO_V1(threadmem_iwindow);
Datum
threadmem_iwindow(PG_FUNCTION_ARGS)
{
	text	   *hay = PG_GETARG_TEXT_PP(0);
	text	   *needle = PG_GETARG_TEXT_PP(1);
	int32		lead = PG_GETARG_INT32(2);
	int32		width = PG_GETARG_INT32(3);
	const char *start = VARDATA_ANY(hay);
	const char *end = start + VARSIZE_ANY_EXHDR(hay);
	const char *at = ifind(start, end - start, VARDATA_ANY(needle), VARSIZE_ANY_EXHDR(needle));
	const char *from;
	const char *to;
	int32		n;

	if (at == NULL)
		PG_RETURN_NULL();
	from = at;
	for (n = 0; n < lead && from > start; n++)
		do
			from--;
		while (from > start && ((unsigned char) *from & 0xC0) == 0x80);
	to = from;
	for (n = 0; n < width && to < end; n++)
		do
			to++;
		while (to < end && ((unsigned char) *to & 0xC0) == 0x80);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(from, to - from));
}

/*
 * The operators' right operand is a LIKE pattern: the form pg_trgm's LIKE and
 * ILIKE strategies read trigrams from. It starts and ends with %, and holds
 * the term with \, % and _ escaped by a backslash; an unescaped % inside
 * stands for nothing. It only tells pg_trgm where a word may end: around the
 * term's separators, '%ticket%-%4711%' asks the index for the trigrams of
 * "ticket" and "4711" without the ones that mark a word's first or last
 * letters ("  t", "11 "), which nearly every message has. The term, its
 * escapes and markers removed, is cached for the statement in fn_extra.
 */
typedef struct ContainsPattern
{
	int			size;			/* the pattern's bytes, to notice a new operand */
	int			length;
	char		term[FLEXIBLE_ARRAY_MEMBER];
} ContainsPattern;

static ContainsPattern *
contains_pattern(FunctionCallInfo fcinfo, text *pattern)
{
	ContainsPattern *cached = (ContainsPattern *) fcinfo->flinfo->fn_extra;
	const char *p = VARDATA_ANY(pattern);
	int			size = VARSIZE_ANY_EXHDR(pattern);
	ContainsPattern *parsed;
	int			i;

	if (cached && cached->size == size && memcmp(cached->term + cached->length + 1, p, size) == 0)
		return cached;
	if (size < 2 || p[0] != '%' || p[size - 1] != '%')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("threadmem_search: the pattern must be '%%<term>%%'")));
	/* The term, then the pattern itself to recognise it on the next call. */
	parsed = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, offsetof(ContainsPattern, term) + 2 * size + 1);
	parsed->size = size;
	parsed->length = 0;
	for (i = 1; i < size - 1; i++)
	{
		char		c = p[i];

		if (c == '%')
			continue;
		if (c == '\\' && i + 1 < size - 1)
			c = p[++i];
		else if (c == '\\' || c == '_')
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("threadmem_search: the pattern's term has an unescaped \"%c\"", c)));
		parsed->term[parsed->length++] = c;
	}
	parsed->term[parsed->length] = '\0';
	memcpy(parsed->term + parsed->length + 1, p, size);
	if (cached)
		pfree(cached);
	fcinfo->flinfo->fn_extra = parsed;
	return parsed;
}

PG_FUNCTION_INFO_V1(threadmem_contains_pattern);
Datum
threadmem_contains_pattern(PG_FUNCTION_ARGS)
{
	text	   *hay = PG_GETARG_TEXT_PP(0);
	ContainsPattern *pattern = contains_pattern(fcinfo, PG_GETARG_TEXT_PP(1));

	PG_RETURN_BOOL(ifind(VARDATA_ANY(hay), VARSIZE_ANY_EXHDR(hay), pattern->term, pattern->length) != NULL);
}
