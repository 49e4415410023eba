#!/usr/bin/env bash
# `make deploy`: the distributed stack of deploy/compose.yaml on this host, with Podman.
#
#   scripts/deploy.sh [up]   build the image (cached), write deploy/.env once, start the stack
#   scripts/deploy.sh down   stop it (the volumes stay: `down -v` removes them too)
#   scripts/deploy.sh ps|logs|...   any other podman-compose command
#
# deploy/.env keeps the stack's secrets (DJANGO_SECRET_KEY, POSTGRES_PASSWORD) and ports;
# edit it to change them. The site is then at http://<host>:LB_PORT/ (default 8080).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh runtime
for tool in podman runc; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: apt-get install podman runc debootstrap" >&2; exit 1; }
done

# Podman as these machines run it (root, runc, cgroupfs) and ulimits it may grant, in a
# containers.conf of the stack's own rather than the host's.
conf="deploy/.containers.conf"
nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] && nofile=1048576
cat >"$conf" <<CONF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
CONF
export CONTAINERS_CONF="$PWD/$conf"

env_file=deploy/.env
if [ ! -f "$env_file" ]; then
  umask 077
  secret() { .venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(32))'; }
  {
    echo "DJANGO_SECRET_KEY=$(secret)"
    echo "POSTGRES_PASSWORD=$(secret)"
    echo "LB_PORT=8080"
    echo "ALLOWED_HOSTS=localhost,127.0.0.1,$(hostname)"
    echo "# Plain HTTP on a trusted network; behind TLS remove these two and set BEHIND_TLS_PROXY=true."
    echo "SESSION_COOKIE_SECURE=false"
    echo "CSRF_COOKIE_SECURE=false"
  } >"$env_file"
  echo "Wrote $env_file (the stack's secrets and ports)."
fi
[ -f config.yaml ] || { cp config.example.yaml config.yaml; echo "Created config.yaml from config.example.yaml: add a model key there (see README)."; }

compose() { .venv/bin/podman-compose -f deploy/compose.yaml --env-file "$env_file" "$@"; }
command="${1:-up}"
[ $# -eq 0 ] || shift
if [ "$command" = up ]; then
  DEERFLOW_IMAGE="localhost/$(scripts/build_server_image.sh --print-tag)"
  scripts/build_server_image.sh
  export DEERFLOW_IMAGE
  compose up -d "$@"
  port=$(grep -E '^LB_PORT=' "$env_file" | cut -d= -f2); port=${port:-8080}
  echo "DeerFlow is starting at http://localhost:$port/ (GET /api/health/ready answers 200 once it is up)."
else
  compose "$command" "$@"
fi
