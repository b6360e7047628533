#!/usr/bin/env bash
# The runtime requirements alone (what `make run` installs, no test tools) must
# start a Celery worker on each documented broker: Redis and RabbitMQ. A test
# venv hides a missing dependency when a test tool happens to pull it in.
#
# usage: scripts/check-runtime-brokers.sh PYTHON [BROKER_URL...]
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:?usage: $0 PYTHON [BROKER_URL...]}
shift
brokers=("$@")
[ ${#brokers[@]} -gt 0 ] || brokers=("redis://127.0.0.1:6379/12" "amqp://guest:guest@127.0.0.1:5672//")

venv=$(mktemp -d /tmp/threadmem-runtime.XXXXXX)
trap 'rm -rf "$venv"' EXIT
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r requirements.txt

for broker in "${brokers[@]}"; do
  log="$venv/worker.log"
  SECRET_KEY="${SECRET_KEY:-runtime-check-$RANDOM$RANDOM}" CELERY_BROKER_URL="$broker" "$venv/bin/celery" -A config worker --pool solo -Q threadmem-runtime-check \
    --without-gossip --without-mingle --without-heartbeat -l info >"$log" 2>&1 &
  pid=$!
  ready=""
  for _ in $(seq 60); do
    if grep -q "ready\." "$log"; then ready=1; break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [ -z "$ready" ]; then
    echo "a worker on the runtime requirements alone did not start on ${broker%%:*}:" >&2
    tail -20 "$log" >&2
    exit 1
  fi
  echo "runtime requirements start a worker on ${broker%%:*}"
done
