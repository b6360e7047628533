"""How the 12,000 characters are shared between the literal part and the ranked lane.

The rule (docs/search.md, "How the 12,000 characters are shared"), within contract §2's caps
(literal part ≤ 8,000 characters, whole result ≤ 12,000, literal part first):

- a query whose whole text has a literal hit, or a one-term query (an
  identifier, a path): the literal part keeps its 8,000 characters, the
  ranked lane has what is left;
- a described question (several terms, no literal hit of the whole query,
  only of its words), first page: the literal part lists no word hit, only
  the line that counts them and offers the cursor (``DESCRIBED_LITERAL_MAX_CHARS``);
  the ranked lane takes the rest, best first. The newest hits of single
  words rarely hold the evidence; the ranked lane's keyword ranking orders
  the same words by rarity. A cursor page lists word hits as contract §2 says.

The ranked lane's entries never repeat a message the literal part lists, and
stop at an entry's end, so the whole result is not cut mid-window.
"""

from __future__ import annotations

from threadmem.features.search.ranked import thread_legend
from threadmem.features.search.ranked.lane import RankedText

# The literal part of a described question's first page: room for its more-hits
# line (the count and the cursor) only, no word hit: the room goes to the ranked
# lane, which finds more of the evidence (docs/search.md, "How the 12,000 characters are shared").
DESCRIBED_LITERAL_MAX_CHARS = 0
ALL_LISTED = "Every ranked message is among the literal hits above."


def fit(semantic: str, *, room: int, listed: set[int]) -> str:
    """The ranked lane's text for ``room`` characters; a one-line text (a note) as it is.

    In the global scope an entry costs its thread's line too the first time one of its thread is shown
    (``thread_legend.py``); the lines follow the entries.
    """
    if not isinstance(semantic, RankedText):
        return semantic
    if semantic.note and all(entry.message_id in listed for entry in semantic.entries):
        return semantic.note
    lines = [semantic.head] if semantic.head else []
    used = len(semantic.head)
    kept = 0
    legend: list[str] = []
    for entry in semantic.entries:
        if entry.message_id in listed:
            continue
        thread_line = semantic.thread_lines.get(entry.message_id)
        new_line = thread_line is not None and thread_line not in legend
        cost = len(entry.text) + (1 if lines else 0)
        if new_line:
            cost += len(thread_line) + 1 + (0 if legend else len(thread_legend.HEAD) + 1)
        if used + cost > room:
            break
        lines.append(entry.text)
        if new_line:
            legend.append(thread_line)
        used += cost
        kept += 1
    if not kept and len(semantic.head) + 1 + len(ALL_LISTED) <= room:
        lines.append(ALL_LISTED)
    if legend:
        lines += [thread_legend.HEAD, *legend]
    return "\n".join(lines)
