#!/usr/bin/env bash
# Builds and installs threadmem's own PostgreSQL extension (pg/: the
# threadmem_search functions and the threadmem_trgm_ops operator class) into
# the local PostgreSQL server, with PGXS against postgresql-server-dev-NN.
# Idempotent: does nothing when the installed copy was built from these sources.
# The service runs without it (search falls back to ~*); migration 0007
# creates it in the database where the server offers it.
set -euo pipefail
cd "$(dirname "$0")/.."

major=$(ls /etc/postgresql 2>/dev/null | sort -n | tail -1)
if [ -z "$major" ]; then
  echo "install-pg-extension: no local PostgreSQL cluster under /etc/postgresql; build pg/ for your server yourself" >&2
  exit 1
fi
pg_config="/usr/lib/postgresql/$major/bin/pg_config"
stamp="/usr/share/postgresql/$major/extension/threadmem_search.sha256"
sources=$(cat pg/Makefile pg/*.c pg/threadmem_search.control pg/threadmem_search--*.sql | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sources" ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-pg-extension: run this as root to install threadmem_search into PostgreSQL $major" >&2
  exit 1
fi
# pg_config can be there without the server's headers (it ships with more than
# the dev package): look for postgres.h itself.
if [ ! -x "$pg_config" ] || [ ! -f "$("$pg_config" --includedir-server 2>/dev/null)/postgres.h" ] \
  || ! command -v gcc >/dev/null || ! command -v make >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "postgresql-server-dev-$major" make gcc >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp pg/Makefile pg/*.c pg/threadmem_search.control pg/threadmem_search--*.sql "$work"
# with_llvm=no: no JIT bitcode (clang is not needed, and these functions gain nothing from inlining).
make -s -C "$work" PG_CONFIG="$pg_config" with_llvm=no >/dev/null
make -s -C "$work" PG_CONFIG="$pg_config" with_llvm=no install >/dev/null
echo "$sources" > "$stamp"
echo "install-pg-extension: threadmem_search installed for PostgreSQL $major"
