#!/usr/bin/env bash
# Embedded PostgreSQL cluster for kforge under $KFORGE_DATA_DIR/pg (default ./var/pg).
# Usage: scripts/pg.sh start|stop|status|url
#   start   creates the cluster on first use, starts it on 127.0.0.1, prints its URL
#   stop    stops it (data stays); status: running or not; url: prints the URL
# Env: KFORGE_DATA_DIR, KFORGE_PG_PORT (default: first free port from 5433), KFORGE_PG_BINDIR,
#      KFORGE_PG_FAST=1 (fsync off: for throwaway test clusters only).
# PostgreSQL refuses to run as root, so as root the cluster belongs to a system
# user 'kforge' (created on demand) and pg_ctl runs through runuser.
set -euo pipefail

cmd=${1:-status}
data_root=${KFORGE_DATA_DIR:-./var}
mkdir -p "$data_root"
data_root=$(cd "$data_root" && pwd)
pg_root="$data_root/pg"
pg_data="$pg_root/data"
pg_user=$(id -un)

# KFORGE_PG_BINDIR: PostgreSQL binaries elsewhere (a GPU host without apt: bench/gpu/run_device.sh).
bindir=${KFORGE_PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
if [ -z "$bindir" ] || [ ! -x "$bindir/pg_ctl" ]; then
  echo "pg.sh: PostgreSQL server binaries not found; run scripts/install-deps.sh" >&2
  exit 1
fi

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u "$pg_user" -- "$@"; else "$@"; fi
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

is_running() { [ -f "$pg_data/PG_VERSION" ] && as_owner "$bindir/pg_ctl" -D "$pg_data" status >/dev/null 2>&1; }

url() { echo "postgresql://kforge@127.0.0.1:$(cat "$pg_root/port")/kforge"; }

ensure_user() {
  [ "$(id -u)" -eq 0 ] || return 0
  pg_user=kforge
  id -u kforge >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin kforge
  mkdir -p "$pg_root"
  chown kforge "$pg_root"
  # The data root is kforge's own folder: let the cluster's owner pass through it.
  chmod o+x "$data_root"
  if ! runuser -u kforge -- test -w "$pg_root"; then
    echo "pg.sh: user 'kforge' cannot reach $pg_root (a parent folder is not searchable)." >&2
    echo "pg.sh: set KFORGE_DATA_DIR to a folder under /tmp or /var/lib, or run: chmod o+x on the parents" >&2
    exit 1
  fi
}

init_cluster() {
  [ -f "$pg_data/PG_VERSION" ] && return 0
  mkdir -p "$pg_root"
  [ "$(id -u)" -eq 0 ] && chown kforge "$pg_root"
  as_owner "$bindir/initdb" -D "$pg_data" -U kforge -A trust -E UTF8 --locale=C >"$pg_root/initdb.log" 2>&1 || {
    echo "pg.sh: initdb failed, see $pg_root/initdb.log" >&2; tail -n 5 "$pg_root/initdb.log" >&2; exit 1; }
  {
    echo "listen_addresses = '127.0.0.1'"
    echo "unix_socket_directories = ''"
    echo "max_connections = 300"
    echo "shared_buffers = 256MB"
    echo "shared_preload_libraries = 'pg_stat_statements'"
    if [ "${KFORGE_PG_FAST:-0}" = 1 ]; then
      echo "fsync = off"
      echo "synchronous_commit = off"
      echo "full_page_writes = off"
    fi
  } | as_owner tee -a "$pg_data/postgresql.conf" >/dev/null
}

case "$cmd" in
  start)
    ensure_user
    init_cluster
    if is_running; then
      echo "pg.sh: cluster in $pg_data is already running" >&2
      url
      exit 0
    fi
    port=${KFORGE_PG_PORT:-}
    if [ -z "$port" ] && [ -f "$pg_root/port" ] && port_free "$(cat "$pg_root/port")"; then
      port=$(cat "$pg_root/port")
    fi
    if [ -z "$port" ]; then
      for candidate in $(seq 5433 5633); do
        if port_free "$candidate"; then port=$candidate; break; fi
      done
    fi
    if ! port_free "$port"; then
      echo "pg.sh: port $port is in use; set KFORGE_PG_PORT to a free port" >&2
      exit 1
    fi
    echo "$port" | as_owner tee "$pg_root/port" >/dev/null
    as_owner "$bindir/pg_ctl" -D "$pg_data" -l "$pg_root/server.log" -o "-p $port" -w -t 60 start >/dev/null || {
      echo "pg.sh: PostgreSQL failed to start, see $pg_root/server.log" >&2; tail -n 5 "$pg_root/server.log" >&2; exit 1; }
    as_owner "$bindir/psql" -h 127.0.0.1 -p "$port" -U kforge -d postgres -qAtc \
      "SELECT 1 FROM pg_database WHERE datname='kforge'" | grep -q 1 ||
      as_owner "$bindir/createdb" -h 127.0.0.1 -p "$port" -U kforge kforge
    url | as_owner tee "$pg_root/url" >/dev/null
    url
    ;;
  stop)
    [ "$(id -u)" -eq 0 ] && pg_user=kforge
    if is_running; then as_owner "$bindir/pg_ctl" -D "$pg_data" -m fast -w stop >/dev/null; fi
    echo "pg.sh: stopped"
    ;;
  status)
    [ "$(id -u)" -eq 0 ] && pg_user=kforge
    if is_running; then echo "running: $(url)"; else echo "not running"; exit 3; fi
    ;;
  url)
    [ -f "$pg_root/port" ] || { echo "pg.sh: no cluster in $pg_root" >&2; exit 1; }
    url
    ;;
  *)
    echo "usage: scripts/pg.sh start|stop|status|url" >&2
    exit 2
    ;;
esac
