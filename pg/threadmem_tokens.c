/*
 * threadmem_tokens: a field's lexemes as a tsvector, for the token index.
 *
 * A run is a maximal run of ASCII letters and digits, lowered; every other
 * byte separates runs (non-ASCII characters included). The lexemes are each
 * run's first TOKEN_CHARS bytes and, for each two runs in a row, their link:
 * the first's last LINK_TAIL_CHARS bytes at most, reversed, the byte between
 * them when it is one of LINK_SEPARATORS (else "|"), the second's first
 * LINK_HEAD_CHARS at most. A link says the runs are neighbours, which
 * single lexemes cannot (a large field holds most common runs somewhere), and
 * it holds the two ends that meet, so it serves a term whose first run may
 * end a longer run of the field and whose last may start one ("connection
 * refused"). No positions, no dictionary: the index only has to say which
 * fields hold a lexeme, or one with a prefix. A field whose distinct lexemes
 * reach UNINDEXED_BYTES (a tsvector holds at most 1 MB of them) is the one
 * lexeme "!all" instead, which every token query also asks for.
 *
 * threadmem.search.database.field_tokens is the reference; a test holds the two
 * equal.
 */
#include "postgres.h"

#include <stdlib.h>
#include <string.h>

#include "fmgr.h"
#include "tsearch/ts_type.h"
#include "utils/builtins.h"

#define TOKEN_CHARS 32
#define LINK_TAIL_CHARS 6
#define LINK_HEAD_CHARS 4
#define LINK_CHARS (LINK_TAIL_CHARS + 1 + LINK_HEAD_CHARS)
/* A link's middle: the one byte between the two runs when it is one of these, else '|'. */
#define LINK_SEPARATORS " ./\\-_:"
#define UNINDEXED_BYTES 500000
#define UNINDEXED_TOKEN "!all"

typedef struct Token
{
	const char *start;
	int			length;
} Token;

static inline bool
is_run_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* tsvector's order of lexemes (tsCompareString): bytes, then the shorter first. */
static int
compare_tokens(const void *left, const void *right)
{
	const Token *a = (const Token *) left;
	const Token *b = (const Token *) right;
	int			cmp = memcmp(a->start, b->start, Min(a->length, b->length));

	if (cmp != 0)
		return cmp;
	return (a->length > b->length) - (a->length < b->length);
}

static TSVector
make_tsvector(Token *tokens, int count, int bytes)
{
	Size		size = CALCDATASIZE(count, bytes);
	TSVector	out = (TSVector) palloc0(size);
	WordEntry  *entries = ARRPTR(out);
	char	   *strings;
	int			position = 0;

	SET_VARSIZE(out, size);
	out->size = count;
	strings = STRPTR(out);
	for (int i = 0; i < count; i++)
	{
		entries[i].haspos = 0;
		entries[i].len = tokens[i].length;
		entries[i].pos = position;
		memcpy(strings + position, tokens[i].start, tokens[i].length);
		position += tokens[i].length;
	}
	return out;
}

/* FNV-1a over a lexeme's bytes. */
static inline uint32
hash_token(const char *start, int length)
{
	uint32		hash = 2166136261u;

	for (int i = 0; i < length; i++)
		hash = (hash ^ (unsigned char) start[i]) * 16777619u;
	return hash;
}

/* The distinct lexemes, found through an open-addressing table of their indexes + 1 (0: empty). */
typedef struct Lexemes
{
	Token	   *tokens;
	int			count;
	int		   *table;
	int			slots;			/* a power of two, at least twice the most lexemes */
	Size		bytes;
} Lexemes;

/* Adds the lexeme unless it is there; whether it was new. */
static bool
add_lexeme(Lexemes *lexemes, const char *start, int length)
{
	uint32		slot = hash_token(start, length) & (lexemes->slots - 1);

	for (;;)
	{
		int			index = lexemes->table[slot] - 1;

		if (index < 0)
		{
			lexemes->tokens[lexemes->count].start = start;
			lexemes->tokens[lexemes->count].length = length;
			lexemes->table[slot] = ++lexemes->count;
			lexemes->bytes += length;
			return true;
		}
		if (lexemes->tokens[index].length == length && memcmp(lexemes->tokens[index].start, start, length) == 0)
			return false;
		slot = (slot + 1) & (lexemes->slots - 1);
	}
}

PG_FUNCTION_INFO_V1(threadmem_tokens);
Datum
threadmem_tokens(PG_FUNCTION_ARGS)
{
	text	   *field = PG_GETARG_TEXT_PP(0);
	const unsigned char *bytes = (const unsigned char *) VARDATA_ANY(field);
	Size		length = VARSIZE_ANY_EXHDR(field);
	char	   *lowered = palloc(length + 1);
	/* A link for each run after the first: at most one run every two bytes. */
	char	   *links = palloc((length / 2 + 1) * LINK_CHARS);
	Size		links_used = 0;
	const char *previous = NULL;
	Size		previous_length = 0;
	Size		previous_end = 0;
	Lexemes		lexemes = {0};
	Size		i = 0;

	/* Two lexemes a run at most, at most one run every two bytes; twice that many slots. */
	lexemes.slots = 64;
	while ((Size) lexemes.slots < 2 * (length + 1))
		lexemes.slots *= 2;
	lexemes.table = palloc0(sizeof(int) * lexemes.slots);
	lexemes.tokens = palloc(sizeof(Token) * (lexemes.slots / 2));
	while (i < length)
	{
		Size		start;
		Size		run;

		if (!is_run_byte(bytes[i]))
		{
			i++;
			continue;
		}
		start = i;
		while (i < length && is_run_byte(bytes[i]))
		{
			unsigned char c = bytes[i];

			lowered[i] = (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
			i++;
		}
		run = i - start;
		add_lexeme(&lexemes, lowered + start, Min(run, TOKEN_CHARS));
		if (previous != NULL)
		{
			/* tsrif|seco: where the two meet, the first's last bytes reversed, then the second's first */
			char	   *link = links + links_used;
			int			tail = Min(previous_length, LINK_TAIL_CHARS);
			int			head = Min(run, LINK_HEAD_CHARS);

			bool		one = start - previous_end == 1 && bytes[previous_end] != 0 && strchr(LINK_SEPARATORS, bytes[previous_end]) != NULL;

			for (int k = 0; k < tail; k++)
				link[k] = previous[previous_length - 1 - k];
			link[tail] = one ? (char) bytes[previous_end] : '|';
			memcpy(link + tail + 1, lowered + start, head);
			if (add_lexeme(&lexemes, link, tail + 1 + head))
				links_used += tail + 1 + head;
		}
		previous = lowered + start;
		previous_length = run;
		previous_end = i;
	}
	if (lexemes.bytes >= UNINDEXED_BYTES)
	{
		Token		all = {UNINDEXED_TOKEN, strlen(UNINDEXED_TOKEN)};

		PG_RETURN_POINTER(make_tsvector(&all, 1, all.length));
	}
	if (lexemes.count > 1)
		qsort(lexemes.tokens, lexemes.count, sizeof(Token), compare_tokens);
	PG_RETURN_POINTER(make_tsvector(lexemes.tokens, lexemes.count, (int) lexemes.bytes));
}
