"""What is embedded of a message: its content and its tool-argument leaves, in overlapping pieces.

Pure functions, so the pieces are the same on every database and in every
worker. A piece is at most ``CHUNK_CHARS`` characters; neighbours overlap by
``CHUNK_OVERLAP`` so a sentence cut at one edge is whole in the next piece.
Cuts prefer whitespace near the edge, and never split a character (Python
strings are code points).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

CHUNK_CHARS = 1_000
CHUNK_OVERLAP = 200
# A cut looks this far back from the edge for whitespace before cutting a word.
CUT_SLACK = 100
# Leaves shorter than this say nothing an embedding can use ("ls", "-l").
LEAF_MIN_CHARS = 3
# The field a message's own text is embedded under (a tool argument's: "tool_args.<path>").
CONTENT_FIELD = "content"
# A turn's sentences, each embedded too (search/ranked/sentences.py): those of at least this many words, in a piece
# of two to SENTENCES_MAX of them (more is a document, not a turn).
SENTENCE_MIN_WORDS = 3
SENTENCES_MAX = 16
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# How a piece's sentence vectors are stored (``Chunk.sentences``): float16 rows, half float32's room.
SENTENCE_DTYPE = np.dtype("<f2")


@dataclass(frozen=True)
class Piece:
    field: str  # "content" or "tool_args.<path>", as search names fields
    start: int  # offset of the piece in that field's text
    text: str
    last: bool  # the field ends with this piece


def spans(text: str, *, size: int = CHUNK_CHARS, overlap: int = CHUNK_OVERLAP) -> Iterator[tuple[int, int]]:
    """(start, end) of each piece of ``text``: consecutive pieces overlap by about ``overlap``."""
    if not text.strip():
        return
    start = 0
    while True:
        end = min(start + size, len(text))
        if end < len(text):
            cut = text.rfind(" ", end - CUT_SLACK, end)
            if cut > start + overlap:
                end = cut
        yield start, end
        if end >= len(text):
            return
        start = max(end - overlap, start + 1)


def message_pieces(content: str, leaves: Iterable[tuple[str, str]]) -> list[Piece]:
    """The pieces of one message: ``leaves`` are (path, value) of its tool-call arguments."""
    pieces = [Piece(CONTENT_FIELD, start, content[start:end], end == len(content)) for start, end in spans(content)]
    for path, value in leaves:
        if len(value.strip()) < LEAF_MIN_CHARS:
            continue
        pieces.extend(
            Piece(f"tool_args.{path}", start, value[start:end], end == len(value)) for start, end in spans(value)
        )
    return pieces


def sentences(text: str) -> list[str]:
    """The sentences of a piece of prose worth a vector of their own: none when it has one (its vector says what
    the sentence says) or more than ``SENTENCES_MAX``."""
    found = [part.strip() for part in _SENTENCE_END.split(text) if len(part.split()) >= SENTENCE_MIN_WORDS]
    return found if 2 <= len(found) <= SENTENCES_MAX else []


def packed_sentences(vectors: Sequence[Sequence[float]]) -> bytes | None:
    """A piece's sentence vectors as ``Chunk.sentences`` stores them (None: it has none)."""
    return np.asarray(vectors, dtype=SENTENCE_DTYPE).tobytes() if len(vectors) else None


def unpacked_sentences(raw: bytes, width: int) -> np.ndarray | None:
    """``Chunk.sentences``' rows of ``width`` dimensions as float32; None when it holds none of that width."""
    if not raw or len(raw) % (SENTENCE_DTYPE.itemsize * width):
        return None
    return np.frombuffer(raw, dtype=SENTENCE_DTYPE).reshape(-1, width).astype(np.float32)
