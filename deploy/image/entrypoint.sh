#!/bin/sh
# The server image's commands (deploy/compose.yaml, deploy/helm/): one image, one role each.
#   web        a Daphne server on $WEB_BIND:$PORT (default 0.0.0.0:8000): HTTP, SSE and websockets
#   worker     a Celery worker executing runs (RUN_EXECUTOR=celery) and scheduled tasks
#   beat       Celery beat: fires scheduled tasks (run exactly one)
#   channels   the IM channels worker (run exactly one per bot)
#   migrate    apply migrations, then exit (before the servers of a new release start)
#   postgres, redis, haproxy   the stack's own services where no registry image is wanted
# Anything else is run as given (`podman run … deerflow-server python manage.py shell`).
set -eu
role="${1:-web}"
[ $# -eq 0 ] || shift
case "$role" in
  web)
    exec python -m deerflow_site.server.daphne_server -b "${WEB_BIND:-0.0.0.0}" -p "${PORT:-8000}" --proxy-headers \
      --application-close-timeout 5 deerflow_site.asgi:application "$@" ;;
  worker)
    exec celery -A deerflow_site worker -P threads -c "${CELERY_CONCURRENCY:-16}" --without-mingle --without-gossip \
      --loglevel "${CELERY_LOG_LEVEL:-info}" --hostname "worker@%h" "$@" ;;
  beat)
    exec celery -A deerflow_site beat --loglevel "${CELERY_LOG_LEVEL:-info}" -s /tmp/celerybeat-schedule "$@" ;;
  channels)
    exec python manage.py run_channels "$@" ;;
  migrate)
    exec python manage.py migrate --noinput "$@" ;;
  postgres)
    exec /opt/deerflow/app/deploy/image/postgres.sh "$@" ;;
  redis)
    exec redis-server --bind 0.0.0.0 --protected-mode no --dir /var/lib/redis --appendonly yes "$@" ;;
  haproxy)
    exec haproxy -W -db -f "${HAPROXY_CONFIG:-/opt/deerflow/app/deploy/haproxy.cfg}" "$@" ;;
  *)
    exec "$role" "$@" ;;
esac
