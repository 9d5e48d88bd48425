#!/usr/bin/env bash
# Installs (if needed) and starts a local PostgreSQL for the tests, then prints its URL.
# Idempotent: safe to run again on a machine where the server already runs.
set -euo pipefail
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
fi
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
data=/var/tmp/mnemon-pg
port=${MNEMON_PG_PORT:-55432}
if [ ! -s "$data/PG_VERSION" ]; then
  mkdir -p "$data" && chown postgres:postgres "$data"
  runuser -u postgres -- "$bin/initdb" -D "$data" -A trust -U postgres >/dev/null
fi
if ! runuser -u postgres -- "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
  runuser -u postgres -- "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w \
    -o "-p $port -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >&2
fi
for _ in $(seq 1 30); do
  runuser -u postgres -- "$bin/pg_isready" -h 127.0.0.1 -p "$port" >/dev/null 2>&1 && break
  sleep 1
done
runuser -u postgres -- "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -tAc \
  "SELECT 1 FROM pg_roles WHERE rolname='mnemon'" | grep -q 1 ||
  runuser -u postgres -- "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -qc \
    "CREATE ROLE mnemon LOGIN SUPERUSER PASSWORD 'mnemon'"
runuser -u postgres -- "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -tAc \
  "SELECT 1 FROM pg_database WHERE datname='mnemon'" | grep -q 1 ||
  runuser -u postgres -- "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres -O mnemon mnemon
echo "postgresql+psycopg://mnemon:mnemon@127.0.0.1:$port/mnemon"
