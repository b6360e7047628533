"""How much of its piece each ranked entry shows: what decides how many messages fit in the room.

The lane's answer is a list of entries within the room ``share.fit`` gives it
(at most 12,000 characters in all); each costs its header line (~90
characters) and a window of its piece. Wider windows show more of the best
messages; narrower ones list more of them. The static model's lane shows its
first 10 entries through 300-character windows and the rest through 100 (tuned
with it: docs/benchmarks.md, "Ranked lane tuning"). A sentence model's
ranking (MiniLM, a configured model) puts more of the evidence below the
first entries, so its lane lists more of them: 300 characters for the first 5,
80 for the rest, each window opening a fifth of its width before the query's
first word instead of 60 characters (a short window opened 60 characters
before a word would show little after it). Tuned on LoCoMo's tune half
(docs/benchmarks.md, "The meaning half's model").
"""

from __future__ import annotations

from dataclasses import dataclass

from threadmem.features.embeddings import static


@dataclass(frozen=True)
class Packing:
    full_entries: int  # entries shown through the full window, the first ones
    full_chars: int
    short_chars: int  # the later entries' window
    lead_chars: int  # a window opens this many characters before the query's first word at most ...
    lead_share: int  # ... and at most 1/lead_share of its width

    def width(self, rank: int) -> int:
        """The window of the entry at ``rank`` (0: the first)."""
        return self.full_chars if rank < self.full_entries else self.short_chars

    def lead(self, width: int) -> int:
        return min(self.lead_chars, width // self.lead_share)


STATIC_PACKING = Packing(full_entries=10, full_chars=300, short_chars=100, lead_chars=60, lead_share=1)
SENTENCE_PACKING = Packing(full_entries=5, full_chars=300, short_chars=80, lead_chars=60, lead_share=5)


def for_model(model: str) -> Packing:
    return STATIC_PACKING if model == static.STATIC_MODEL else SENTENCE_PACKING
