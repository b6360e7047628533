"""Where bench/recall.py draws the line between what the model has in context and what it must recall.

A session Claude Code compacted ("claude-code"), or that threadmem's own
automatic compaction compacted while it was imported ("threadmem": its
model-visible text passed ``THREADMEM_COMPACT_AT_CHARS``; with no chat model
configured, the offline summarizer writes the summary): the generations
before the current one are old, and the first summary is what the model
still knows of them.

A session neither compacted but longer than ``--cut-at`` model-visible
characters ("cut", only with ``--cut-at``: a deployment that compacts sooner
than the default), counted as ``Generation.visible_chars`` counts them
(contents plus tool-call arguments): it is cut after the message that passes
the threshold, as that compaction would cut it. The messages up to the cut
are old; there is no summary, so what the model knows of the old part is
what the messages after the cut say (the paths it works on again). The
database is not changed: the cut lives only in the bench, and the scripted
model treats hits after it as in its context.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass
class Split:
    kind: str  # "claude-code", "threadmem" (who compacted it) or "cut" (where threadmem would compact)
    current: int  # the thread's current generation
    cut_seq: int | None  # "cut": the last old message's seq
    old_ids: frozenset[int]  # "cut": the ids of the messages up to the cut
    context: str  # what the model still knows of the old part: the summary, or the text after the cut

    def is_old(self, message_id: int, generation: int) -> bool:
        """A hit the model must recall (not one of its context)."""
        if self.kind != "cut":
            return generation < self.current
        return message_id in self.old_ids

    def old_message(self, message) -> bool:
        return self.is_old(message.id, message.generation)


def visible_size(message) -> int:
    """A message's model-visible characters, as models.Generation.visible_chars adds them up."""
    calls = json.dumps(message.tool_calls) if message.tool_calls else ""
    return len(message.content or "") + len(calls)


def split_of(thread, searchable_text, cut_at: int | None) -> Split | None:
    """The thread's split, or None when it has neither a summary nor more than ``cut_at`` characters."""
    from threadmem.models import MODEL_VISIBLE, Compaction, Message

    summary = Message.objects.filter(thread=thread, kind=Message.Kind.SUMMARY).order_by("seq").first()
    if summary is not None:
        ours = Compaction.objects.filter(thread=thread, summary_message=summary).exists()
        kind = "threadmem" if ours else "claude-code"
        return Split(kind, thread.current_generation, None, frozenset(), summary.content)
    if cut_at is None:
        return None
    total, cut = 0, None
    rows = Message.objects.filter(MODEL_VISIBLE, thread=thread).order_by("seq")
    for message in rows.only("id", "seq", "content", "tool_calls"):
        total += visible_size(message)
        if total > cut_at:
            cut = message.seq
            break
    if cut is None:
        return None
    old = frozenset(Message.objects.filter(thread=thread, seq__lte=cut).values_list("id", flat=True))
    later = Message.objects.filter(MODEL_VISIBLE, thread=thread, seq__gt=cut)
    context = "\n".join(searchable_text(m) for m in later.order_by("seq"))
    if not context:
        return None
    return Split("cut", thread.current_generation, cut, old, context)
