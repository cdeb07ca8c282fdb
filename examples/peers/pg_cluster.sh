#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the benchmarks, started like the tests
# of workflow-postgres start theirs (tests/it/cluster.rs): `initdb` into a
# temporary directory, `pg_ctl start` on a free port of 127.0.0.1 with
# trust authentication, run as the `postgres` user through `runuser` when
# run as root. Unlike the tests' clusters, fsync stays ON: commits are
# measured as durable as they are in production.
#
#   examples/peers/pg_cluster.sh start DIR   # prints the server's base URL
#   examples/peers/pg_cluster.sh stop DIR    # stops it and removes DIR
set -euo pipefail
what=${1:?start or stop}
dir=${2:?a directory for the cluster}

bindir=${WORKFLOW_PG_BINDIR:-}
if [ -z "$bindir" ]; then
  bindir=$(pg_config --bindir 2>/dev/null || true)
  if [ ! -x "$bindir/initdb" ]; then
    bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  fi
fi
if [ ! -x "$bindir/initdb" ] || [ ! -x "$bindir/pg_ctl" ]; then
  echo "no initdb and pg_ctl (WORKFLOW_PG_BINDIR, pg_config --bindir, /usr/lib/postgresql/*/bin)" >&2
  exit 1
fi
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$what" in
  start)
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
    as_pg "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 >/dev/null
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 \
      -o "-p $port -h 127.0.0.1 -k $dir -c max_connections=50" start >/dev/null
    echo "postgres://postgres@127.0.0.1:$port"
    ;;
  stop)
    if [ -f "$dir/data/postmaster.pid" ]; then
      as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac
