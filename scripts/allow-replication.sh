#!/usr/bin/env bash
# Lets the local PostgreSQL cluster stream to replicas on this machine (the replica tests and
# bench/replicas.py start one with pg_basebackup -R): a pg_hba.conf line for replication
# connections from 127.0.0.1, then a reload (never a restart). Idempotent.
set -euo pipefail

major=$(ls /etc/postgresql 2>/dev/null | sort -n | tail -1)
if [ -z "$major" ]; then
  echo "allow-replication: no local PostgreSQL cluster under /etc/postgresql" >&2
  exit 1
fi
hba="/etc/postgresql/$major/main/pg_hba.conf"
line="host replication all 127.0.0.1/32 trust"
if grep -qxF "$line" "$hba"; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "allow-replication: $hba has no replication line; run this as root" >&2
  exit 1
fi
echo "$line" >>"$hba"
psql -h 127.0.0.1 -U postgres -Atqc "SELECT pg_reload_conf()" >/dev/null
