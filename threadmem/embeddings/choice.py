"""Which model embeds: a configured OpenAI-compatible one, else the static one shipped in a package.

``active_model()`` names the vectors search ranks by and appends store;
``embed`` sends texts to that model. A configured model replaces the static
one; ``THREADMEM_STATIC_EMBEDDINGS=false`` turns the static one off (no
vectors at all without a configured model).
"""

from __future__ import annotations

from django.conf import settings

from threadmem import llm
from threadmem.embeddings import static


def active_model() -> str:
    """The embedding model in force ("" when none)."""
    if llm.embeddings_configured():
        return llm.embedding_model()
    return static.STATIC_MODEL if settings.THREADMEM_STATIC_EMBEDDINGS else ""


def embed(texts: list[str], *, model: str, timeout: float | None = None) -> list[list[float]]:
    """One vector per text from ``model``: in this process for the static model, else from the model server."""
    if model == static.STATIC_MODEL:
        return static.embed(texts)
    if timeout is None:  # the client's own timeout (THREADMEM_LLM_TIMEOUT)
        return llm.embed(texts, model=model)
    return llm.embed(texts, model=model, timeout=timeout)
