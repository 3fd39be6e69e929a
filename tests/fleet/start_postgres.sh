#!/usr/bin/env bash
# Start a throwaway PostgreSQL (Debian's package) on 127.0.0.1 for the fleet tests and print its URL.
# Runs the server as the `postgres` user (initdb refuses root); idempotent: a running server is reused.
# Usage: bash tests/fleet/start_postgres.sh [PORT]   (data in ${AKA_PG_DATA:-/tmp/aka-pg-PORT})
set -euo pipefail
PORT=${1:-55432}
DATA=${AKA_PG_DATA:-/tmp/aka-pg-$PORT}
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$BIN" ]; then
  echo "PostgreSQL is not installed: apt-get install postgresql (as .ci/run does)" >&2
  exit 2
fi
as_postgres() { runuser -u postgres -- "$@"; }
if [ ! -f "$DATA/PG_VERSION" ]; then
  install -d -o postgres -g postgres -m 700 "$DATA"
  as_postgres "$BIN/initdb" -D "$DATA" -A trust -U postgres >/dev/null
fi
if ! as_postgres "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
  as_postgres "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -k $DATA -c max_connections=300" start >/dev/null
fi
if ! as_postgres "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -Atc \
    "select 1 from pg_database where datname = 'aka_test'" | grep -q 1; then
  as_postgres "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres aka_test
fi
echo "postgresql://postgres@127.0.0.1:$PORT/aka_test"
