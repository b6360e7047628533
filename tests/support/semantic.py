"""Semantic test helpers: a message and a paraphrase of it that shares no word, the semantic part of an answer."""

from __future__ import annotations

from threadmem.search.bounded import SEMANTIC_HEADING

EVIDENCE = "The postgres replica fell behind the primary by 40 seconds during the nightly backup."
PARAPHRASE = "database replication lag"


def semantic_part(text: str) -> str:
    return text.split(f"\n{SEMANTIC_HEADING}\n", 1)[1]


def listed_ids(part: str) -> set[int]:
    return {int(line.split()[1].removeprefix("messageId=")) for line in part.splitlines() if line.startswith("--- ")}
