"""Which model embeds: a configured OpenAI-compatible one, else one that runs in this process from a package.

``active_model()`` names the vectors search ranks by and appends store;
``embed`` sends texts to that model. A configured model replaces the
in-process ones. Of those, ``THREADMEM_STATIC_EMBEDDINGS`` picks: ``true``
the static model (``static.py``), ``sentence`` (the default) the sentence model
(``sentence.py``: the sentence model and the Universal Sentence Encoder; the static one
where their packages are missing), ``false``
none (no vectors at all without a configured model).
"""

from __future__ import annotations

import logging
from functools import cache

from django.conf import settings

from threadmem.features.embeddings import sentence, static
from threadmem.infrastructure import llm

logger = logging.getLogger(__name__)


@cache
def _sentence_installed() -> bool:
    if sentence.available():
        return True
    logger.warning("the sentence model's packages are not installed: the static model embeds (requirements.txt)")
    return False


def active_model() -> str:
    """The embedding model in force ("" when none)."""
    if llm.embeddings_configured():
        return llm.embedding_model()
    if settings.THREADMEM_SENTENCE_EMBEDDINGS and _sentence_installed():
        return sentence.SENTENCE_MODEL
    return static.STATIC_MODEL if settings.THREADMEM_STATIC_EMBEDDINGS else ""


def in_process(model: str) -> bool:
    """Whether ``model`` runs in this process (no server to wait for: the lane's tight budget applies)."""
    return model in (static.STATIC_MODEL, sentence.SENTENCE_MODEL)


def load(model: str) -> None:
    """Load an in-process model before a search's clock starts: the static model now (a few hundred
    milliseconds, once a process); the sentence model on a background thread (``meaning_ready`` says when)."""
    if model == static.STATIC_MODEL:
        static.model()
    elif model == sentence.SENTENCE_MODEL:
        sentence.start_loading()


def start_loading() -> None:
    """Start loading the in-process model in force on a background thread, as a web process starts: the sentence
    model only (the static model loads in a moment, on first use)."""
    if active_model() == sentence.SENTENCE_MODEL:
        sentence.start_loading()


def embeds_sentences(model: str) -> bool:
    """Whether a conversation turn's sentences are embedded apart too (``chunks.sentences``): the sentence model's,
    where it was measured; a configured server would be called for each."""
    return model == sentence.SENTENCE_MODEL


def meaning_ready(model: str) -> bool:
    """Whether a search may embed its query with ``model`` now: the sentence model once loaded in this process (its
    load started here if it was not), any other model always (the static one loads in a moment, a server is
    called)."""
    if model != sentence.SENTENCE_MODEL:
        return True
    sentence.start_loading()
    return sentence.ready()


def meaning_failed(model: str) -> bool:
    """Whether ``model`` failed to load in this process (the sentence model only: a broken install, logged)."""
    return model == sentence.SENTENCE_MODEL and sentence.failed()


def embed(texts: list[str], *, model: str, timeout: float | None = None) -> list[list[float]]:
    """One vector per text from ``model``: in this process for the in-process models, else from the model server."""
    if model == static.STATIC_MODEL:
        return static.embed(texts)
    if model == sentence.SENTENCE_MODEL:
        return sentence.embed(texts)
    if timeout is None:  # the client's own timeout (THREADMEM_LLM_TIMEOUT)
        return llm.embed(texts, model=model)
    return llm.embed(texts, model=model, timeout=timeout)
