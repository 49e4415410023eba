#!/usr/bin/env bash
# `make run`: start DeerFlow on the embedded default (SQLite, in-process runs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh runtime

[ -f config.yaml ] || { cp config.example.yaml config.yaml; echo "Created config.yaml from config.example.yaml: add a model key there (see README)."; }
[ -f extensions_config.json ] || cp extensions_config.example.json extensions_config.json

# A local server runs with DJANGO_DEBUG on unless told otherwise; its secret key is made
# once and kept under DEER_FLOW_HOME so sessions survive restarts.
export DJANGO_DEBUG="${DJANGO_DEBUG:-true}"
home="${DEER_FLOW_HOME:-$PWD/.deer-flow}"
mkdir -p "$home"
if [ -z "${DJANGO_SECRET_KEY:-}" ]; then
  [ -s "$home/secret_key" ] || (umask 077; .venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(50))' > "$home/secret_key")
  DJANGO_SECRET_KEY="$(cat "$home/secret_key")"
  export DJANGO_SECRET_KEY
fi

.venv/bin/python manage.py migrate --noinput -v0

HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"

# Daphne serves the site; a Celery worker with embedded beat fires scheduled tasks (on the
# filesystem broker under DEER_FLOW_HOME, or on Redis when CELERY_BROKER_URL/REDIS_URL is
# set). RUN_CELERY=false starts Daphne alone (e.g. when beat and workers run elsewhere).
# Stopping `make run` (Ctrl-C, SIGTERM), or any of them exiting, stops them all.
pids=()
stop_all() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait "${pids[@]}" 2>/dev/null || true
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Several Daphne servers on one port (WEB_PROCESSES, default one per core up to two;
# deerflow_site/server/web_processes.py, docs/deployment.md), each with request bodies bounded and
# streamed (deerflow_site/server/daphne_server.py), and the Celery worker: the launcher forks them
# all from one set of preloaded imports, so they share those pages, and it lets the worker go once
# every server listens: each server pins itself to a free core, and a worker started sooner could
# take one of them. The worker lives and dies with the servers, as they do with each other.
also=()
if [ "${RUN_CELERY:-true}" = true ]; then
  also=(--also-run "celery -A deerflow_site worker --beat --pool threads --concurrency ${CELERY_CONCURRENCY:-4} --without-mingle --without-gossip --loglevel ${CELERY_LOG_LEVEL:-warning} --hostname deerflow@%h")
fi
ready="$home/web.ready"
.venv/bin/python -m deerflow_site.server.web_processes -b "$HOST" -p "$PORT" --ready-file "$ready" "${also[@]}" deerflow_site.asgi:application &
web=$!
pids+=("$web")
while [ ! -s "$ready" ]; do
  kill -0 "$web" 2>/dev/null || { wait "$web" || exit $?; exit 1; }
  sleep 0.2
done
processes="$(cat "$ready")"
echo "DeerFlow is running at http://$HOST:$PORT/ on $processes web process$([ "$processes" = 1 ] || echo es)  (admin: http://$HOST:$PORT/admin/, API docs: http://$HOST:$PORT/api/docs/)"
if ! .venv/bin/python manage.py shell -v0 -c 'from django.contrib.auth import get_user_model; import sys; sys.exit(0 if get_user_model().objects.filter(is_superuser=True).exists() else 1)' 2>/dev/null; then
  echo "No admin account yet: open the site and sign up (the first account becomes the admin), or run  .venv/bin/python manage.py createsuperuser"
fi

# The IM channels worker (Telegram, ...), when config.yaml turns any channel on. It is its own
# process: restart it with `manage.py run_channels` without touching the server.
# RUN_CHANNELS=false never starts it here (it runs elsewhere); true starts it regardless.
channels_mode="${RUN_CHANNELS:-auto}"
if [ "$channels_mode" = auto ] && .venv/bin/python manage.py run_channels --check -v0 2>/dev/null; then channels_mode=true; fi
if [ "$channels_mode" = true ]; then
  echo "IM channels are on: starting the channels worker (manage.py run_channels)"
  .venv/bin/python manage.py run_channels &
  pids+=($!)
fi
wait -n "${pids[@]}"
