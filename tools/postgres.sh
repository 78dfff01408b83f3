#!/usr/bin/env bash
# A throwaway PostgreSQL server on 127.0.0.1, for the gradebook tests (.ci/run starts one; the
# tests start their own when AUTOGRADER_TEST_POSTGRES is not set).
#
#   bash tools/postgres.sh install      install Debian's `postgresql` where initdb is missing (root or sudo)
#   bash tools/postgres.sh start DIR    a new server with its files in DIR (made if missing; its parent
#                                       must be reachable by the `postgres` user, e.g. /tmp); prints its URL
#   bash tools/postgres.sh stop DIR     stop that server and remove DIR
#
# initdb and pg_ctl refuse to run as root, so as root they run as the `postgres` user that the
# package creates. The server trusts local connections and skips fsync: it holds test data only.
set -euo pipefail

bin_dir() {
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$found" ] || [ ! -x "$found/initdb" ]; then
    found=$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/initdb)")
  fi
  [ -x "$found/initdb" ] || return 1
  echo "$found"
}

as_owner() {  # run a server command as the user who owns the data
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
  install)
    bin_dir >/dev/null && exit 0
    if [ "$(id -u)" -eq 0 ]; then as_root=(); else as_root=(sudo -n); fi
    "${as_root[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq postgresql >/dev/null
    bin_dir >/dev/null || { echo "postgres.sh: installed postgresql, but no initdb was found" >&2; exit 1; }
    ;;
  start)
    dir=${2:?usage: postgres.sh start DIR}
    bin=$(bin_dir) || { echo "postgres.sh: PostgreSQL is not installed: run 'bash tools/postgres.sh install'" \
                              "(it installs Debian's postgresql package, as .ci/run does)" >&2; exit 1; }
    mkdir -p "$dir"
    [ "$(id -u)" -ne 0 ] || chown postgres: "$dir"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null ||
      { cat "$dir/server.log" >&2; exit 1; }
    echo "postgresql://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    dir=${2:?usage: postgres.sh stop DIR}
    if [ -f "$dir/data/postmaster.pid" ] && bin=$(bin_dir); then
      as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: bash tools/postgres.sh install | start DIR | stop DIR" >&2
    exit 2
    ;;
esac
