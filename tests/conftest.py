"""Shared fixtures: the three personas (owner, other user, admin) plus an operator,
API clients authenticated with real DRF tokens; the row factories are tests/support/factories.py."""

from __future__ import annotations

import os
import warnings

import pytest
from django.conf import settings as django_settings
from django.db import connection

from tests.support.factories import console_client, make_thread, token_client
from tests.support.personas import client_fixture, persona_fixture
from tests.support.search import skip_without_search_extension
from threadmem.models import Thread

# Settings make up a key under pytest and never write .secret_key; the
# processes the tests start (Celery workers, manage.py) use the same one.
os.environ.setdefault("SECRET_KEY", django_settings.SECRET_KEY)
# The processes the tests start embed with the static model as before the sentence model became the default:
# each would otherwise load it (~300 MB) to embed what its test never ranks. Its own tests set it
# (tests/embeddings/test_sentence.py).
os.environ.setdefault("THREADMEM_STATIC_EMBEDDINGS", "static")


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's, then the connections search's worker threads keep are closed before it drops the
    test database (PostgreSQL refuses to drop a database that has sessions)."""
    yield
    from tests.support.semantic import close_lane_connections

    close_lane_connections()
    with django_db_blocker.unblock():
        _report_open_sessions()


def _report_open_sessions() -> None:
    """Name any other session still on the test database: a thread that kept its connection open."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, state, backend_start, left(query, 200) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        for row in cursor.fetchall():
            warnings.warn(f"open session on the test database at teardown: {row}", stacklevel=1)


@pytest.fixture(autouse=True)
def held_vectors():
    """Each test starts with nothing the ranked lane keeps (search/ranked/: vectors, keyword indexes, a global
    scope's pieces): a flushed test database may number its threads and pieces again."""
    from threadmem.features.search.ranked import lexicon, spread, vectors

    vectors.clear()
    lexicon.clear()
    spread.clear()
    yield


# The personas: an owner, another user (the owner's threads answer them 404), an operator (staff: reads
# everything, may not toggle isolation) and an admin.
PERSONAS = {
    "owner": {},
    "other": {},
    "operator": {"is_staff": True},
    "admin": {"is_staff": True, "is_superuser": True},
}
owner, other, operator, admin = (persona_fixture(name, **flags) for name, flags in PERSONAS.items())
# API clients authenticated with real DRF tokens: owner_api, other_api, operator_api, admin_api.
owner_api, other_api, operator_api, admin_api = (client_fixture(name, "api", token_client) for name in PERSONAS)


@pytest.fixture
def thread(owner) -> Thread:
    return make_thread(owner, "slack:C042/1700000000.1", title="deploy the staging box")


@pytest.fixture
def token_indexes(db):
    """The token indexes (on by default: migration 0022), analysed in the test's transaction."""
    from threadmem.features.search.database.capabilities import forget_probe
    from threadmem.features.search.database.token_index import token_indexes_create

    skip_without_search_extension()
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # rows a fixture added have pending FK checks
    token_indexes_create()
    yield
    forget_probe()  # the rollback drops their statistics: read again


@pytest.fixture
def without_token_indexes(db):
    """A store without the token indexes (``token_index drop``), for the test's transaction only."""
    from threadmem.features.search.database.capabilities import forget_probe
    from threadmem.features.search.database.token_index import token_indexes_drop

    token_indexes_drop()
    yield
    forget_probe()  # the rollback brings them back


# The ways a thread search may match: on PostgreSQL a scan of the thread's
# rows, or the trigram indexes, with the thread's spelling of a term tried
# first when its newest content has it (threadmem/features/search/literal/plan.py); with
# threadmem's own extension (pg/, "fast-"), a scan or the indexes with its
# functions and operator. SQLite has one.
THREAD_MATCH_PATHS = (
    ("index", "spelled", "scan", "fast-index", "fast-scan") if connection.vendor == "postgresql" else ("scan",)
)


@pytest.fixture
def tune(monkeypatch):
    """Literal search's tuning for one test: ``tune(index_budget_ms=60_000)`` (search/literal/plan.py, TUNING)."""
    from dataclasses import replace

    from threadmem.features.search.literal import plan

    def set_knobs(**knobs) -> None:
        monkeypatch.setattr(plan, "TUNING", replace(plan.TUNING, **knobs))

    return set_knobs


@pytest.fixture(params=THREAD_MATCH_PATHS)
def thread_match(request, django_db_setup, django_db_blocker, tune) -> str:
    """Run the test once with each way a thread search may match."""
    fast = request.param.startswith("fast-")
    path = request.param.removeprefix("fast-")
    tune(pg_extension=fast)
    if fast:
        with django_db_blocker.unblock():
            skip_without_search_extension()
    tune(thread_scan_bytes=10**12 if path == "scan" else 0)
    tune(spelling_sample_bytes=10**9 if path == "spelled" else 0)
    tune(scan_bytes_per_ms=1)  # the index path's budget: minutes, it cannot run out
    tune(index_budget_ms=60_000)  # nor a global search's on a loaded machine (a test wanting the fallback sets 1)
    return request.param


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # PBKDF2's default iterations cost about half a second per persona on a
    # small machine; tests need working passwords, not strong ones.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_cache():
    """Each test starts with an empty cache: the agent-turn throttle counts there, and user ids repeat across tests."""
    from django.core.cache import cache

    cache.clear()


# --- console (server-rendered pages): session-authenticated test clients ---


owner_console, operator_console, admin_console = (
    client_fixture(name, "console", console_client) for name in ("owner", "operator", "admin")
)


# --- models and tasks: the OpenAI-compatible fake, Celery eager mode (compaction issue) ---


@pytest.fixture(scope="session")
def fake_openai_server():
    from tests.support.fake_openai import FakeOpenAI

    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def fake_openai(fake_openai_server, settings):
    """The fake OpenAI-compatible server (tests/support/fake_openai.py), reset, with the chat model pointed at it.

    Sets OPENAI_BASE_URL, OPENAI_API_KEY and THREADMEM_CHAT_MODEL; a test
    that wants embeddings sets ``settings.THREADMEM_EMBEDDING_MODEL =
    fake_openai.embedding_model`` itself.
    """
    fake_openai_server.reset()
    settings.OPENAI_BASE_URL = fake_openai_server.base_url
    settings.OPENAI_API_KEY = fake_openai_server.api_key
    settings.THREADMEM_CHAT_MODEL = fake_openai_server.chat_model
    yield fake_openai_server
    fake_openai_server.reset()


@pytest.fixture
def no_model(settings):
    """No model server at all, whatever the environment says: the offline paths."""
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = ""
    settings.THREADMEM_CHAT_MODEL = ""
    settings.THREADMEM_EMBEDDING_MODEL = ""


@pytest.fixture(autouse=True)
def static_embeddings_off(settings):
    """The in-process models (the sentence model on by default in the product) are off unless a test turns one on
    (``static_model``, ``sentence_model``).

    Otherwise every committed append would embed in a background thread that
    outlives its test, and "Other memory results" would depend on its timing.
    """
    settings.THREADMEM_STATIC_EMBEDDINGS = False
    settings.THREADMEM_SENTENCE_EMBEDDINGS = False


@pytest.fixture
def static_model(settings):
    """The ranked lane with the static model, as a host that sets THREADMEM_STATIC_EMBEDDINGS=static runs it."""
    from threadmem.features.embeddings import tasks

    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = ""
    settings.THREADMEM_EMBEDDING_MODEL = ""
    settings.THREADMEM_STATIC_EMBEDDINGS = True
    yield
    tasks.wait_for_background()


@pytest.fixture(autouse=True)
def celery_mode(request):
    """Tasks run in-process in every test, broker or not, except tests marked ``worker``.

    CI also runs the suite with CELERY_BROKER_URL set; without this, tasks
    would go to a broker with no worker. ``worker`` tests start real worker
    processes and are skipped when no broker is configured.
    """
    from django.conf import settings as django_settings

    from config.celery import app

    is_worker_test = request.node.get_closest_marker("worker") is not None
    if is_worker_test and not django_settings.CELERY_BROKER_URL:
        pytest.skip("needs a broker: set CELERY_BROKER_URL (CI runs these on Redis)")
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = not is_worker_test
    yield
    app.conf.task_always_eager = previous
