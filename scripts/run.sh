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
echo "DeerFlow is running at http://$HOST:$PORT/  (admin: http://$HOST:$PORT/admin/, API docs: http://$HOST:$PORT/api/docs/)"
if ! .venv/bin/python manage.py shell -v0 -c 'from django.contrib.auth import get_user_model; import sys; sys.exit(0 if get_user_model().objects.filter(is_superuser=True).exists() else 1)' 2>/dev/null; then
  echo "No admin account yet: create one with  .venv/bin/python manage.py createsuperuser"
fi
exec .venv/bin/daphne -b "$HOST" -p "$PORT" deerflow_site.asgi:application
