# The two commands a newcomer needs: `make run` and `make test`.
# Django 5.2 LTS: needs Python 3.11 or newer. We look for one and refuse with
# a clear message if there is none.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3 $$HOME/.pyenv/versions/3.1[123]*/bin/python3; do \
	  command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && { command -v $$p; break; }; \
	done)

.PHONY: run test lint format bench-ingest bench-search bench-sqlite bench-console bench-load bench-replicas bench-recall bench-mcp bench-import bench-described bench-embedding bench-secrets bench-pointer fuzz clean python pgvector pg-extension check-runtime

python:
	@if [ -z "$(PYTHON)" ]; then \
	  echo "threadmem needs Python 3.11 or newer (Django 5.2 LTS); none was found on PATH or in ~/.pyenv." >&2; \
	  echo "Install one (e.g. apt-get install python3.11) or pass PYTHON=/path/to/python3.11." >&2; exit 1; fi

$(VENV)/.installed-run: requirements.txt | python
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | python
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $@ $(VENV)/.installed-run

# The per-checkout SECRET_KEY that settings read when SECRET_KEY is unset
# (importing settings never writes it; production sets SECRET_KEY).
.secret_key: | python
	@umask 077 && $(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(50))' > $@.tmp && mv $@.tmp $@

run: $(VENV)/.installed-run .secret_key
	$(PY) manage.py database
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py demo --host $(HOST) --port $(PORT)
	@# One ASGI app, as in production: Django (API, console, static files) and MCP at /mcp/.
	$(VENV)/bin/uvicorn config.asgi:application --host $(HOST) --port $(PORT)

# pgvector for a PostgreSQL on this machine (the semantic part's vectors).
pgvector:
	bash scripts/install-pgvector.sh

# threadmem's own search extension (pg/) for a PostgreSQL on this machine.
pg-extension:
	bash scripts/install-pg-extension.sh

test: $(VENV)/.installed-dev
	@# Tests on a local PostgreSQL need pgvector and threadmem_search in it.
	@case "$$DATABASE_URL" in postgres*://*@127.0.0.1*|postgres*://*@localhost*) \
	  bash scripts/install-pgvector.sh && bash scripts/install-pg-extension.sh;; esac
	@# The console's browser tests drive Debian's chromium (Playwright never downloads one).
	@command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(PY) -m pytest $(PYTEST_ARGS)

# The runtime requirements alone start a worker on Redis and on RabbitMQ (CI runs this).
check-runtime: | python
	bash scripts/check-runtime-brokers.sh $(PYTHON)

format: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench-ingest: $(VENV)/.installed-dev .secret_key
	$(PY) bench/ingest.py

bench-search: $(VENV)/.installed-dev .secret_key
	bash scripts/install-pg-extension.sh
	$(PY) bench/search.py --semantic

# Global search on SQLite, the embedded default (its own file in the temporary directory, or BENCH_SQLITE_PATH):
# a scan of every message. BENCH_MESSAGES=100000 for a smaller store.
bench-sqlite: $(VENV)/.installed-dev .secret_key
	$(PY) bench/sqlite_search.py

bench-console: $(VENV)/.installed-dev .secret_key
	$(PY) bench/console.py

bench-load: $(VENV)/.installed-dev .secret_key
	$(PY) bench/load.py

# Searches with 0 and 1 streaming replica under appends and searches (threadmem_bench_replicas; a replica
# copied with pg_basebackup into a temporary folder): searches/s, p50/p99, where the reads went.
bench-replicas: $(VENV)/.installed-dev .secret_key
	bash scripts/allow-replication.sh
	$(PY) bench/replicas.py

# Recall on the shared real Claude Code sessions (../shared/data/claude-code), in threadmem_bench_recall;
# other sessions: make bench-recall RECALL_ARGS="--data DIR [--cut-at CHARS]".
bench-recall: $(VENV)/.installed-dev .secret_key
	bash scripts/install-pg-extension.sh
	$(PY) bench/recall.py $(RECALL_ARGS)

bench-mcp: $(VENV)/.installed-dev .secret_key
	$(PY) bench/mcp.py

# LoCoMo's data/locomo10.json (github.com/snap-research/LoCoMo, CC BY-NC 4.0: never committed).
# The variable is LOCOMO, not PATH: a make variable named PATH would replace the shell's.
bench-described: $(VENV)/.installed-dev .secret_key
	@if [ -z "$(LOCOMO)" ]; then echo "usage: make bench-described LOCOMO=/path/to/locomo10.json (github.com/snap-research/LoCoMo, data/locomo10.json)" >&2; exit 2; fi
	$(PY) bench/described.py "$(LOCOMO)"

# The sentence model's cost on one core: a real session embedded, long tool output, a query, the memory.
bench-embedding: $(VENV)/.installed-dev .secret_key
	$(PY) bench/embedding.py

bench-delete: $(VENV)/.installed-dev .secret_key
	$(PY) bench/delete.py

# The pointer after a compaction on the shared sessions, then the hook's cost; the names alone, each pointer shown:
# make bench-pointer POINTER_ARGS="--names-only --show"
bench-pointer: $(VENV)/.installed-dev .secret_key
	$(PY) bench/pointer.py $(POINTER_ARGS)

bench-import: $(VENV)/.installed-dev .secret_key
	$(PY) bench/import.py
	$(PY) bench/identifiers.py

# The secret redactor measured (issue 51): its own corpus, gitleaks' published true positives, bait, the shared
# real sessions and throughput; no database. A gitleaks checkout elsewhere, one half, the figures as JSON:
# make bench-secrets SECRETS_ARGS="--gitleaks ~/src/gitleaks --half report --json secrets.json"
bench-secrets: $(VENV)/.installed-dev
	$(PY) bench/redaction.py $(SECRETS_ARGS)

# The API fuzz test (tests/api/test_fuzz.py) at length: 300 cases an operation instead of the suite's 12 (minutes).
fuzz: $(VENV)/.installed-dev
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-300} $(PY) -m pytest -p no:cacheprovider tests/api/test_fuzz.py $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) staticfiles test-artifacts .pytest_cache .ruff_cache .import_linter_cache
