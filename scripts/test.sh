#!/usr/bin/env bash
# `make test`: the whole suite. Tier 1 runs everything on the embedded stack (SQLite,
# in-memory layers) with a throwaway Redis for the Redis-marked tests; tier 2 runs the
# database-sensitive tests again on a throwaway PostgreSQL. Extra arguments go to pytest
# in tier 1 (and skip tier 2), e.g. `make test ARGS="tests/harness -k config"`.
# `scripts/test.sh --under-load [ARGS]` runs it with two CPU-bound processes beside it the
# whole time, as on a busy machine: a test that then fails asserts timing, not behaviour.
set -euo pipefail
cd "$(dirname "$0")/.."
under_load=false
if [ "${1:-}" = "--under-load" ]; then under_load=true; shift; fi
scripts/bootstrap.sh test

# The suite starts many Python processes (servers, workers, shells, commands run as a
# user types them); with bytecode written once they stop compiling the same sources again, and
# pytest keeps its rewritten test modules. Some machines turn bytecode off in the environment.
unset PYTHONDONTWRITEBYTECODE

work=$(mktemp -d /tmp/deerflow-test.XXXXXX)
chmod 755 "$work"
PGDATA_DIR=""
load_pids=()
image_pid=""
cleanup() {
  [ ${#load_pids[@]} -eq 0 ] || kill "${load_pids[@]}" 2>/dev/null || true
  [ -z "$image_pid" ] || kill -- "-$image_pid" 2>/dev/null || true
  [ ! -f "$work/redis.pid" ] || kill "$(cat "$work/redis.pid")" 2>/dev/null || true
  if [ -n "${PGDATA_DIR:-}" ] && [ -f "$PGDATA_DIR/postmaster.pid" ]; then as_pg "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m immediate stop >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { .venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# PostgreSQL refuses to run as root: run its tools as the postgres user then.
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

start_redis() {
  command -v redis-server >/dev/null 2>&1 || return 1
  local port; port=$(free_port)
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" --daemonize no >"$work/redis.log" 2>&1 &
  echo $! > "$work/redis.pid"
  for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && { REDIS_TEST_URL="redis://127.0.0.1:$port/0"; return 0; }
    sleep 0.1
  done
  return 1
}

start_postgres() {
  PG_BIN=$(dirname "$(readlink -f "$(command -v initdb 2>/dev/null || ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")")
  PGDATA_DIR="$work/pgdata"
  mkdir -p "$PGDATA_DIR"
  [ "$(id -u)" -ne 0 ] || chown postgres "$PGDATA_DIR"
  local port; port=$(free_port)
  as_pg "$PG_BIN/initdb" -D "$PGDATA_DIR" -U deerflow --auth=trust -E UTF8 >"$work/initdb.log" 2>&1
  as_pg "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -w -l "$PGDATA_DIR/server.log" \
    -o "-h 127.0.0.1 -p $port -k $PGDATA_DIR -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" start >/dev/null
  as_pg "$PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U deerflow deerflow
  PG_URL="postgresql://deerflow@127.0.0.1:$port/deerflow"
}

if $under_load; then
  for _ in 1 2; do sha256sum /dev/zero >/dev/null 2>&1 & load_pids+=($!); done
  echo "note: two CPU-bound processes run beside the suite (--under-load)." >&2
fi

# The container sandbox's image: on a fresh machine its build takes minutes (debootstrap, the
# toolbox's wheels), mostly waiting on downloads and disk. Started now, it overlaps with the
# tests; the container tests wait for it (tests/support/container_engine.py). A built image
# makes this a no-op. Targeted runs leave the build to the tests that need it.
if [ $# -eq 0 ] && [ "$(id -u)" -eq 0 ] && command -v podman >/dev/null 2>&1 && command -v runc >/dev/null 2>&1 \
   && command -v debootstrap >/dev/null 2>&1; then
  # A process group of its own, so that the cleanup stops the whole build if the suite ends first.
  setsid bash -c 'rc=0; scripts/build_sandbox_image.sh >"$1.log" 2>&1 || rc=$?; echo "$rc" >"$1.rc"' _ "$work/sandbox-image" &
  image_pid=$!
  export DEERFLOW_TEST_SANDBOX_IMAGE_BUILD="$work/sandbox-image"
fi

REDIS_TEST_URL=""
start_redis || true
export DEERFLOW_TEST_REDIS_URL="$REDIS_TEST_URL"
[ -n "$DEERFLOW_TEST_REDIS_URL" ] || echo "note: no redis-server; Redis tests will be skipped." >&2

# The whole suite runs on two pytest-xdist workers. Each test file is one group (its live
# servers start once) and the browser files are one group between them (tests/conftest.py);
# TEST_WORKERS=1 runs it in one process. TEST_WORKERS=4 splits the browser files in two groups,
# for a machine with cores to spare: on a two-core one four workers took more CPU, no less time
# (benchmarks/HISTORY.md, the test suite). Targeted runs (ARGS=...) stay in one process,
# where a failure reads best.
workers=${TEST_WORKERS:-2}
parallel=()
if [ $# -eq 0 ] && [ "$workers" -gt 1 ]; then parallel=(-n "$workers" --dist loadfile); fi

# Where the time goes: the 30 slowest steps of each tier (docs/development.md keeps the table).
durations=()
if [ $# -eq 0 ]; then durations=(--durations=30 --durations-min=1); fi
# TEST_REPORT_DIR=dir keeps each tier's per-test times as JUnit XML (tier1.xml, tier2.xml);
# scripts/test_times.py sums them per file.
report() { [ -z "${TEST_REPORT_DIR:-}" ] || echo "--junitxml=$TEST_REPORT_DIR/$1.xml"; }

echo "== tier 1: embedded stack (SQLite) =="
# Tier 1 writes which files hold tier-2 tests (tests/conftest.py), so tier 2 collects only those.
DEERFLOW_TIER2_FILES="$work/tier2-files" .venv/bin/python -m pytest -q "${parallel[@]}" "${durations[@]}" $(report tier1) "$@"

if [ $# -gt 0 ]; then exit 0; fi

echo "== tier 2: PostgreSQL =="
tier2=()
[ ! -s "$work/tier2-files" ] || mapfile -t tier2 < "$work/tier2-files"
start_postgres
DATABASE_URL="$PG_URL" .venv/bin/python -m pytest -q "${parallel[@]}" "${durations[@]}" -m "db_tier or postgres" -p no:cacheprovider $(report tier2) "${tier2[@]}"
