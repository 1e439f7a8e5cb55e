#!/usr/bin/env bash
# Starts a throwaway PostgreSQL for tests: initdb in a temp dir owned by the
# postgres user, listening on a free loopback port, and prints its URL on stdout.
# Usage: eval "$(scripts/postgres.sh start)"  -> exports GATEWAY_TEST_POSTGRES_URL, PG_TMPDIR
#        scripts/postgres.sh stop "$PG_TMPDIR"
# PostgreSQL refuses to run as root, so as root every server command runs as
# the postgres user. Installs Debian's postgresql package when no binaries exist.
set -euo pipefail

find_bindir() {
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
  return 1
}

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  local bindir
  if ! bindir=$(find_bindir); then
    echo "postgres.sh: installing the postgresql package" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 && apt-get install -y -qq postgresql >&2
    bindir=$(find_bindir)
  fi
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
    useradd --system --home /var/lib/postgresql --shell /bin/bash postgres
  fi
  local dir port
  dir=$(mktemp -d /tmp/gateway-pg.XXXXXX)
  [ "$(id -u)" = 0 ] && chown postgres: "$dir"
  port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])' 2>/dev/null \
    || shuf -i 20000-60000 -n 1)
  as_pg "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 400
fsync = on
synchronous_commit = on
shared_buffers = 128MB
CONF
  as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >&2 \
    || { cat "$dir/server.log" >&2; exit 1; }
  echo "export PG_TMPDIR='$dir' PG_BINDIR='$bindir'"
  echo "export GATEWAY_TEST_POSTGRES_URL='postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable'"
}

stop() {
  local dir=${1:?usage: postgres.sh stop DIR} bindir
  bindir=$(find_bindir)
  as_pg "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) shift; stop "$@" ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
