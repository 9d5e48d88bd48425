#!/usr/bin/env bash
# Starts (if needed) a local PostgreSQL 16 with the pgvector extension for the dense-vector
# tests, then prints its URL. Debian 12 packages no pgvector, so the server is the build the
# `pgserver` wheel ships (a `dev` extra): its bin/ and lib/postgresql/vector.so.
# Idempotent: safe to run again on a machine where the server already runs.
set -euo pipefail
port=${MNEMON_PGVECTOR_PORT:-55433}
root=/var/tmp/mnemon-pgvector
data=$root/data
find_install() {
  python3 -c 'import pathlib, pgserver; print(pathlib.Path(pgserver.__file__).parent / "pginstall")' \
    2>/dev/null
}
src=$(find_install || true)
if [ -z "$src" ]; then
  python3 -m pip install -q "pgserver>=0.1.4,<0.2" >&2
  src=$(find_install)
fi
# The wheel may sit under a folder the postgres user cannot enter (e.g. /root): the server runs
# from a copy it can read, refreshed when the wheel's copy changes. The copy keeps the wheel's
# layout: the binaries find their libraries at $ORIGIN/../../../pgserver.libs.
site=$(dirname "$(dirname "$src")")
bin=$root/site/pgserver/pginstall/bin
if [ ! -x "$bin/pg_ctl" ] || ! cmp -s "$src/bin/postgres" "$bin/postgres"; then
  rm -rf "$root/site"
  mkdir -p "$root/site/pgserver"
  cp -a "$src" "$root/site/pgserver/pginstall"
  cp -a "$site/pgserver.libs" "$root/site/pgserver.libs"
  chmod -R a+rX "$root/site"
fi
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
if [ ! -s "$data/PG_VERSION" ]; then
  mkdir -p "$data"
  [ "$(id -u)" -ne 0 ] || chown postgres:postgres "$data"
  chmod 700 "$data"
  as_pg "$bin/initdb" -D "$data" -A trust -U postgres >/dev/null
fi
if ! as_pg "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
  as_pg "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w \
    -o "-p $port -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" \
    start >&2
fi
for _ in $(seq 1 30); do
  as_pg "$bin/pg_isready" -h 127.0.0.1 -p "$port" >/dev/null 2>&1 && break
  sleep 1
done
psql() { as_pg "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres "$@"; }
psql -tAc "SELECT 1 FROM pg_roles WHERE rolname='mnemon'" | grep -q 1 ||
  psql -qc "CREATE ROLE mnemon LOGIN SUPERUSER PASSWORD 'mnemon'"
psql -tAc "SELECT 1 FROM pg_database WHERE datname='mnemon'" | grep -q 1 ||
  as_pg "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres -O mnemon mnemon
# In public, so every test's fresh schema finds the type (and dropping one never drops it).
psql -d mnemon -qc "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS vector SCHEMA public"
echo "postgresql+psycopg://mnemon:mnemon@127.0.0.1:$port/mnemon"
