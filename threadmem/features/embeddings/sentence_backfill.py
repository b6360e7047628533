"""Sentences for the turns a store embedded before they had them (``manage.py embeddings --sentences``).

Since the sentence vectors came, a conversation turn's sentences are embedded
with it (``chunks.sentences``, ``thread_embedding``). A store embedded before
holds its turns whole, which rank as they did. This gives them their
sentences, a thread at a time: each piece that should have them and has none
is stored again with them as a new piece (a new id), so that a process
holding the thread's vectors reads it afresh (``search/ranked/vectors.py``: a
held piece never changes). Each batch is stored under the thread's progress
row lock, as an embedding run's: a thread withdrawn for deletion meanwhile
keeps nothing, and a piece dropped meanwhile (an import grew its message) is
not brought back.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from threadmem.features.embeddings import choice
from threadmem.features.embeddings.chunks import CONTENT_FIELD, packed_sentences, sentences
from threadmem.features.embeddings.thread_embedding import PIECES_PER_BATCH, PROSE_ROLES
from threadmem.models import Chunk, EmbeddingProgress

COPIED = ("message_id", "model", "part", "field", "start", "end_of_field", "text", "dimensions", "embedding")


def _candidates(model: str):
    """The pieces of ``model`` that may lack their sentences: prose turns' content stored without any."""
    return Chunk.objects.filter(model=model, field=CONTENT_FIELD, sentences__isnull=True, message__role__in=PROSE_ROLES)


def threads_to_fill(model: str) -> list[int]:
    """The threads holding pieces of ``model`` that may lack their sentences (a turn of one sentence has none,
    and is looked at again: cheap, no model call)."""
    if not choice.embeds_sentences(model):
        return []
    found = _candidates(model).values_list("message__thread_id", flat=True).distinct().order_by()
    return sorted(set(found))


def fill_thread(*, thread_id: int, model: str) -> int:
    """Give the thread's pieces of ``model`` their sentences' vectors; answer how many pieces were stored again."""
    progress = EmbeddingProgress.objects.filter(thread_id=thread_id, model=model).values_list("pk", flat=True).first()
    if progress is None or not choice.embeds_sentences(model):
        return 0
    pieces = _candidates(model).filter(message__thread_id=thread_id).order_by("id")
    stored, after = 0, 0
    while batch := list(pieces.filter(id__gt=after)[:PIECES_PER_BATCH]):
        after = batch[-1].pk
        todo = [(piece, said) for piece in batch if (said := sentences(piece.text))]
        if not todo:
            continue
        vectors = iter(choice.embed([text for _, said in todo for text in said], model=model))
        fresh = {
            piece.pk: Chunk(
                **{name: getattr(piece, name) for name in COPIED},
                sentences=packed_sentences([next(vectors) for _ in said]),
            )
            for piece, said in todo
        }
        with transaction.atomic():
            if not EmbeddingProgress.objects.select_for_update().filter(pk=progress).exists():
                return stored  # withdrawn for deletion
            present = list(Chunk.objects.select_for_update().filter(id__in=list(fresh)).values_list("id", flat=True))
            Chunk.objects.filter(id__in=present).delete()
            Chunk.objects.bulk_create([fresh[pk] for pk in present])
            # The thread's pieces moved: a process keeping its piece ids reads them again (search/ranked/spread.py).
            EmbeddingProgress.objects.filter(pk=progress).update(changes=F("changes") + 1, updated_at=timezone.now())
        stored += len(present)
    return stored
