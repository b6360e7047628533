#!/usr/bin/env bash
# Installs pgvector into the local PostgreSQL server when it lacks it.
#
# Debian packages pgvector as postgresql-NN-pgvector; bookworm's archive has
# no build for its PostgreSQL 15, so where apt has none this builds Debian's
# own pgvector source package (the orig tarball from deb.debian.org, checked
# against the sha256 Debian publishes) against postgresql-server-dev-NN.
# Idempotent: does nothing when the server already offers the extension.
set -euo pipefail

PGVECTOR_VERSION=0.8.0
PGVECTOR_SHA256=867a2c328d4928a5a9d6f052cd3bc78c7d60228a9b914ad32aa3db88e9de27b0
PGVECTOR_URL="http://deb.debian.org/debian/pool/main/p/pgvector/pgvector_${PGVECTOR_VERSION}.orig.tar.gz"

major=$(ls /etc/postgresql 2>/dev/null | sort -n | tail -1)
if [ -z "$major" ]; then
  echo "install-pgvector: no local PostgreSQL cluster under /etc/postgresql; install pgvector on your server yourself" >&2
  exit 1
fi
if [ -f "/usr/share/postgresql/$major/extension/vector.control" ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-pgvector: PostgreSQL $major has no pgvector; run this as root (it installs packages)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if apt-get install -y -qq "postgresql-$major-pgvector" >/dev/null 2>&1; then
  echo "install-pgvector: installed postgresql-$major-pgvector"
  exit 0
fi

echo "install-pgvector: building Debian's pgvector $PGVECTOR_VERSION source for PostgreSQL $major"
apt-get install -y -qq "postgresql-server-dev-$major" make gcc curl >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
curl -fsS -m 120 -o "$work/pgvector.tar.gz" "$PGVECTOR_URL"
echo "$PGVECTOR_SHA256  $work/pgvector.tar.gz" | sha256sum -c --quiet
tar xzf "$work/pgvector.tar.gz" -C "$work" --strip-components=1
make -s -C "$work" PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" >/dev/null
make -s -C "$work" PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" install >/dev/null
echo "install-pgvector: pgvector $PGVECTOR_VERSION installed for PostgreSQL $major"
