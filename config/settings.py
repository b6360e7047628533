"""threadmem settings, read from the environment (contract §7).

Every variable has a default that works on a laptop: an SQLite file, tasks run
in-process, no model. Production sets DATABASE_URL, CELERY_BROKER_URL and
SECRET_KEY. Bad values raise ImproperlyConfigured at start-up, not at the
first request.
"""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.broker import broker_transport_options
from config.databases import databases
from config.env import env_bool, env_float, env_int, env_rate_or_off, env_str
from config.oauth_provider import oauth2_provider
from config.secret_key import secret_key

BASE_DIR = Path(__file__).resolve().parent.parent
# A checkout runs in place (`make run`, the tests): its files are beside the code. An installed copy (`pip install`,
# the `threadmem` command) has no manage.py beside its packages: its files go to the user's data directory, and
# its templates and static files were installed inside config/ (setup.py).
CHECKOUT = (BASE_DIR / "manage.py").is_file()
DATA_DIR = BASE_DIR if CHECKOUT else Path(env_str("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "threadmem"
RESOURCES_DIR = BASE_DIR if CHECKOUT else Path(__file__).resolve().parent

# `make run` creates it in a checkout (the Makefile's .secret_key target); there settings only read it.
SECRET_KEY_FILE = DATA_DIR / ".secret_key"
# Under pytest a missing key is made up for the process (conftest.py hands it to workers).
TESTING = "pytest" in sys.modules


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = secret_key(path=SECRET_KEY_FILE, debug=DEBUG, checkout=CHECKOUT, testing=TESTING)
ALLOWED_HOSTS = [h for h in env_str("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "threadmem",
    "api",
    "console",
    "cli",
    "mcp_server.apps.MCPConfig",
    # The authorization server hosted MCP clients connect through (oauth/).
    "oauth2_provider",
    "oauth.apps.OAuthConfig",
]

MIDDLEWARE = [
    # First: counts every answer, the ones the middleware below gives included (threadmem/infrastructure/metrics.py).
    "threadmem.infrastructure.metrics.request_metrics_middleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last: it runs a model-facing read's view itself, on the database its rule picks (DATABASE_REPLICA_URLS).
    "threadmem.infrastructure.replicas.middleware.ReadRoutingMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [RESOURCES_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL") or f"sqlite:///{DATA_DIR / 'threadmem.sqlite3'}"
# Read replicas (docs/scaling.md): PostgreSQL streaming replicas of DATABASE_URL, comma-separated. The
# model-facing reads (search, the audit read, context, listings) go to one of them; writes stay on the primary
# (threadmem/infrastructure/replicas/). Unset: every read on the primary, no router.
DATABASE_REPLICA_URLS = [url.strip() for url in env_str("DATABASE_REPLICA_URLS").split(",") if url.strip()]
DATABASES = databases(DATABASE_URL, DATABASE_REPLICA_URLS)
if DATABASE_REPLICA_URLS:
    if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_REPLICA_URLS needs a PostgreSQL DATABASE_URL (the replicas' primary)")
    DATABASE_ROUTERS = ["threadmem.infrastructure.replicas.router.ReplicaRouter"]
# A replica further behind the primary than this is not read.
THREADMEM_REPLICA_MAX_LAG_SECONDS = env_float("THREADMEM_REPLICA_MAX_LAG_SECONDS", 10.0)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "staticfiles"
# WhiteNoise warns on every request when this folder is missing; collectstatic fills it.
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STATICFILES_DIRS = [RESOURCES_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve straight from the app folders, so `make run` works without collectstatic.
WHITENOISE_USE_FINDERS = True

LOGIN_URL = "/console/login/"
LOGIN_REDIRECT_URL = "/console/"
LOGOUT_REDIRECT_URL = "/console/login/"

# --- Serving ----------------------------------------------------------------
# config/asgi.py runs Django's WSGI app in a thread pool of this size per
# web process (so sync views answer side by side); with PostgreSQL each thread
# may hold a connection for CONN_MAX_AGE.
THREADMEM_WSGI_THREADS = env_int("THREADMEM_WSGI_THREADS", 16, minimum=1)

# --- Metrics (/metrics, docs/metrics.md) --------------------------------------
# /metrics answers Prometheus' text format to staff (session or API token)
# and to THREADMEM_METRICS_TOKEN sent as "Authorization: Bearer <token>"; anyone else 403.
# Set PROMETHEUS_MULTIPROC_DIR so one scrape sums every process of a host.
THREADMEM_METRICS_TOKEN = env_str("THREADMEM_METRICS_TOKEN")

# --- REST API ---------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["api.fastjson.SafeJSONParser"],
    "EXCEPTION_HANDLER": "api.exceptions.exception_handler",
    # Agent turns per caller (ScopedRateThrottle, counted in the cache: set CACHE_URL so every process shares it).
    "DEFAULT_THROTTLE_RATES": {"turns": env_str("THREADMEM_TURNS_RATE", "30/min") or None},
}
SPECTACULAR_SETTINGS = {
    "TITLE": "threadmem API",
    "DESCRIPTION": "Memory service for long-running LLM agents: threads, generations, bounded search.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SERVE_PERMISSIONS": ["api.permissions.SchemaAccess"],
    # Messages and deletions both have a "kind": each its own enum.
    "ENUM_NAME_OVERRIDES": {
        "MessageKindEnum": "threadmem.models.history.Message.Kind",
        "DeletionKindEnum": "threadmem.models.audit.Deletion.Kind",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.schema.closed_request_bodies",
    ],
}
# The cache holds the agent-turn throttle's counts: per process by default,
# shared by every web process with CACHE_URL=redis://... (production).
_cache_url = env_str("CACHE_URL")
if _cache_url and not _cache_url.startswith(("redis://", "rediss://")):
    raise ImproperlyConfigured(f"CACHE_URL must be a redis:// URL, got {_cache_url!r}")
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _cache_url}
        if _cache_url
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

# --- Celery -----------------------------------------------------------------
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
# Without a broker, tasks run in the calling process (the embedded default).
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Fixed names, not configuration: an operator sharing a broker gives threadmem its own Redis database or
# RabbitMQ vhost in CELERY_BROKER_URL (docs/production.md). The worker tests' own queues come from
# tests/support/child_settings.py.
CELERY_TASK_DEFAULT_QUEUE = "threadmem"
# Compaction, embedding and import tasks each go to a queue of their own, so a worker per queue keeps a burst of one
# kind from delaying the others (docs/production.md); everything else, beat's sweeps included, to the default queue.
COMPACTION_QUEUE = "compaction"
EMBEDDINGS_QUEUE = "embeddings"
IMPORTS_QUEUE = "imports"
CELERY_TASK_ROUTES = {
    "threadmem.compaction.run": {"queue": COMPACTION_QUEUE},
    "threadmem.compaction.resummarize": {"queue": COMPACTION_QUEUE},
    "threadmem.embeddings.embed_thread": {"queue": EMBEDDINGS_QUEUE},
    "threadmem.imports.run": {"queue": IMPORTS_QUEUE},
}

# --- Models (any OpenAI-compatible server) --------------------------------
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL")
OPENAI_API_KEY = env_str("OPENAI_API_KEY")
THREADMEM_CHAT_MODEL = env_str("THREADMEM_CHAT_MODEL")
THREADMEM_EMBEDDING_MODEL = env_str("THREADMEM_EMBEDDING_MODEL")
THREADMEM_LLM_TIMEOUT = env_float("THREADMEM_LLM_TIMEOUT", 60.0, minimum=0.1)
# Agent turns (threadmem/features/agent.py): the most model calls one turn makes before
# it stops and says so; each call may run several tool calls.
THREADMEM_AGENT_MAX_STEPS = env_int("THREADMEM_AGENT_MAX_STEPS", 8, minimum=1)

# --- Search -------------------------------------------------------------------
# The ranked lane (contract §12, threadmem/features/search/ranked): with no embedding model
# configured, messages are embedded in this process by a model shipped inside packages, never
# downloaded. THREADMEM_STATIC_EMBEDDINGS picks it: "sentence" (the default; "minilm" is its older
# name) the sentence model (threadmem/features/embeddings/sentence.py: MiniLM and the Universal
# Sentence Encoder); "static" (or true) the static model in the wordllama package, for a host that
# cannot afford the sentence model's memory (static.py, also the fallback where the
# sentence model's packages are missing); false: no in-process vectors, and without a configured
# model no ranked lane.
_in_process = {
    "sentence": "sentence",
    "minilm": "sentence",
    "static": "static",
    **dict.fromkeys(("1", "true", "yes", "on"), "static"),
    **dict.fromkeys(("0", "false", "no", "off"), ""),
}.get(env_str("THREADMEM_STATIC_EMBEDDINGS").lower() or "sentence")
if _in_process is None:
    raise ImproperlyConfigured(
        "THREADMEM_STATIC_EMBEDDINGS must be sentence (the default), static or false, "
        f"got {env_str('THREADMEM_STATIC_EMBEDDINGS')!r}"
    )
THREADMEM_SENTENCE_EMBEDDINGS = _in_process == "sentence"
THREADMEM_STATIC_EMBEDDINGS = bool(_in_process)
# How long search waits for the semantic part (query embedding, ranking and the
# optional memory answer) before it answers with the literal part and a note.
THREADMEM_SEMANTIC_DEADLINE = env_float("THREADMEM_SEMANTIC_DEADLINE", 5.0, minimum=0.1)
# With a chat model: it writes a short answer from the ranked lane's best messages,
# citing their messageIds, above them (one model call per search; threadmem/features/search/semantic.py).
THREADMEM_MEMORY_ANSWER = env_bool("THREADMEM_MEMORY_ANSWER", False)
# The literal search's tuning is benchmark work, not configuration: constants in
# threadmem/features/search/literal/plan.py (SearchTuning).

# MCP: also send each tool's outputSchema and, beside the text, structuredContent (the REST JSON). Off by
# default: Claude Code hands the model the structuredContent instead of the text, and it repeats every
# window, past the 12,000-character cap (docs/mcp.md).
THREADMEM_MCP_STRUCTURED_CONTENT = env_bool("THREADMEM_MCP_STRUCTURED_CONTENT", False)

# --- Limits -----------------------------------------------------------------
# A message whose content (or tool-call arguments) passes this size answers 413.
THREADMEM_MAX_MESSAGE_BYTES = env_int("THREADMEM_MAX_MESSAGE_BYTES", 2 * 1024 * 1024, minimum=1)
THREADMEM_MAX_BATCH = env_int("THREADMEM_MAX_BATCH", 1000, minimum=1)
# Secrets (AWS keys, tokens, private keys, passwords in URLs) are replaced by a placeholder before anything is
# stored (threadmem/lib/redact.py, docs/secrets.md); false stores what comes verbatim.
THREADMEM_REDACT_SECRETS = env_bool("THREADMEM_REDACT_SECRETS", True)
# Automatic compaction once the current generation's model-visible text passes this.
THREADMEM_COMPACT_AT_CHARS = env_int("THREADMEM_COMPACT_AT_CHARS", 400_000, minimum=1)

# --- MCP over HTTP (mcp_server/http.py) -------------------------------------
# A request with an Origin header (a browser's) is served only from these origins (comma-separated; "scheme://host:*"
# for any port); a request without one (MCP clients, curl) always is. The default: loopback pages only, so a page
# served from elsewhere and rebound to this host by DNS is refused (the MCP specification's DNS-rebinding rule).
THREADMEM_MCP_ALLOWED_ORIGINS = [
    origin.strip()
    for origin in env_str(
        "THREADMEM_MCP_ALLOWED_ORIGINS",
        "http://127.0.0.1,http://127.0.0.1:*,http://localhost,http://localhost:*,http://[::1],http://[::1]:*",
    ).split(",")
    if origin.strip()
]

# --- OAuth for hosted MCP clients (oauth/, docs/mcp.md) ------------------------
# The origin clients reach this server at, e.g. https://memory.example.com: the issuer, the MCP resource and every
# URL the discovery documents name start from it. Empty: from each request's scheme and Host (no proxy in between).
THREADMEM_PUBLIC_URL = env_str("THREADMEM_PUBLIC_URL").rstrip("/")
if THREADMEM_PUBLIC_URL and (
    not THREADMEM_PUBLIC_URL.startswith(("https://", "http://")) or "/" in THREADMEM_PUBLIC_URL.split("://", 1)[1]
):
    raise ImproperlyConfigured(
        f"THREADMEM_PUBLIC_URL must be an origin such as https://host, got {THREADMEM_PUBLIC_URL!r}"
    )
# The origin clients see is the one whose forms (the console, the admin) Django's CSRF check must trust.
CSRF_TRUSTED_ORIGINS = [THREADMEM_PUBLIC_URL] if THREADMEM_PUBLIC_URL else []
# Dynamic client registration (RFC 7591) open to any client, at most this many registrations per client address
# (an IPv6 /64; the next answers 429); false: an operator registers clients in the admin.
THREADMEM_OAUTH_REGISTRATION_RATE = env_rate_or_off("THREADMEM_OAUTH_REGISTRATION", "30/hour")
THREADMEM_OAUTH_REGISTRATION = THREADMEM_OAUTH_REGISTRATION_RATE is not None
# Token lifetimes (docs/mcp.md): an access token an hour, a refresh token 30 days, each use replacing it.
OAUTH_ACCESS_TOKEN_SECONDS = 3600
OAUTH_REFRESH_TOKEN_DAYS = 30
OAUTH2_PROVIDER = oauth2_provider(
    issuer=THREADMEM_PUBLIC_URL,
    registration=THREADMEM_OAUTH_REGISTRATION,
    access_token_seconds=OAUTH_ACCESS_TOKEN_SECONDS,
    refresh_token_days=OAUTH_REFRESH_TOKEN_DAYS,
)
# The library warns that http redirect URIs are allowed: registration (oauth/views.py) takes http on loopback
# addresses only, for clients on the owner's machine (RFC 8252), the rest must be https.
SILENCED_SYSTEM_CHECKS = ["oauth2_provider.W008"]

# --- Imports (threadmem/features/imports/) ---------------------------------------------
# Where API uploads wait for their task: workers must see the same folder.
THREADMEM_IMPORT_DIR = Path(env_str("THREADMEM_IMPORT_DIR") or DATA_DIR / "var" / "imports")
# Uploads up to this size import inside the request; larger ones in a Celery task.
IMPORT_INLINE_MAX_BYTES = 1024 * 1024
# A larger upload answers 413, and what was written of it is deleted.
THREADMEM_IMPORT_MAX_BYTES = env_int("THREADMEM_IMPORT_MAX_BYTES", 256 * 1024 * 1024, minimum=1)

# --- Compaction (threadmem/features/compaction/) ---------------------------------------
# The most characters one summary call sends the model; longer generations are
# chunked and summarized hierarchically.
THREADMEM_SUMMARY_INPUT_CHARS = env_int("THREADMEM_SUMMARY_INPUT_CHARS", 60_000, minimum=2_000)
# The recovery's timings are constants, not configuration (no deployment needs others); the worker processes
# the tests start shorten them (tests/support/child_settings.py).
# Transient model failures are retried this often, backing off exponentially
# from COMPACTION_RETRY_BACKOFF seconds (with jitter, at most 10 minutes).
COMPACTION_MAX_RETRIES = 5
COMPACTION_RETRY_BACKOFF = 10
# Soft time limit of one compaction attempt; the hard limit is 60 s later.
COMPACTION_TIME_LIMIT = 900
# A worker's running claim is trusted this long without a heartbeat (renewed every quarter of it); a
# killed worker's compaction is sent again by the sweep (Celery beat) once it runs out.
COMPACTION_LEASE = 60
COMPACTION_SWEEP_SECONDS = 30
# A compaction sent to the broker but not started within this many seconds is sent again by the sweep (its task
# message was lost, say by a broker restarted without persistence); a duplicate delivery is harmless.
COMPACTION_DISPATCH_TIMEOUT = 60
CELERY_BEAT_SCHEDULE = {
    "compaction-sweep": {"task": "threadmem.compaction.sweep", "schedule": float(COMPACTION_SWEEP_SECONDS)}
}
# --- Retention (threadmem/features/erase/retention.py) ------------------------------------
# Threads idle for longer than this many days are deleted, hourly, with their forks; 0 (the default) keeps them all.
# At most a hundred years (also for `retention --days`): a cutoff before year 1 is past what a datetime holds.
RETENTION_MAX_DAYS = 36_500
THREADMEM_RETENTION_DAYS = env_int("THREADMEM_RETENTION_DAYS", 0, maximum=RETENTION_MAX_DAYS)
if THREADMEM_RETENTION_DAYS:
    CELERY_BEAT_SCHEDULE["retention"] = {"task": "threadmem.erase.retention", "schedule": 3600.0}
# A thread deletion stopped half way (a process killed, the database gone) is finished this often, whether or not
# retention is on (threadmem/features/erase/thread_delete.py).
ERASE_SWEEP_SECONDS = 300
CELERY_BEAT_SCHEDULE["erase-sweep"] = {
    "task": "threadmem.erase.sweep",
    "schedule": float(ERASE_SWEEP_SECONDS),
}
# --- Embeddings (threadmem/features/embeddings/) -------------------------------------------
# Celery beat queues an embedding run this often for each thread with messages not embedded yet (their
# tasks never reached a worker: the broker was down, or lost them); a thread whose run made progress
# within this time is left to it.
EMBEDDINGS_SWEEP_SECONDS = 300
CELERY_BEAT_SCHEDULE["embeddings-sweep"] = {
    "task": "threadmem.embeddings.sweep",
    "schedule": float(EMBEDDINGS_SWEEP_SECONDS),
}
# Registered by workers when they start, not by every process that loads Django (a capture hook starts fast).
CELERY_IMPORTS = ["threadmem.features.erase.tasks"]


CELERY_BROKER_TRANSPORT_OPTIONS = broker_transport_options(3600)

# The request body limit must let a full batch through; messages are checked one by one.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 64 * 1024 * 1024, minimum=1)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "INFO"},
}

# Served over HTTPS (production): secure cookies, a redirect to HTTPS and HSTS;
# `manage.py check --deploy` is clean with this on. Behind a proxy that ends
# TLS, THREADMEM_PROXY_SSL_HEADER=true trusts its X-Forwarded-Proto.
if env_bool("THREADMEM_HTTPS", False):
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
if env_bool("THREADMEM_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

if not DEBUG:
    SESSION_COOKIE_HTTPONLY = True
    X_FRAME_OPTIONS = "DENY"
    SECURE_CONTENT_TYPE_NOSNIFF = True
