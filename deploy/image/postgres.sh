#!/bin/sh
# PostgreSQL for deploy/compose.yaml, from Debian's postgresql-15: a cluster made on first
# start in the volume (/var/lib/postgresql/data), POSTGRES_USER owning POSTGRES_DB, password
# authentication over the network. Runs as the image's postgres user.
set -eu
bin=/usr/lib/postgresql/15/bin
data=/var/lib/postgresql/data
user="${POSTGRES_USER:-deerflow}"
if [ ! -s "$data/PG_VERSION" ]; then
  [ -n "${POSTGRES_PASSWORD:-}" ] || { echo "POSTGRES_PASSWORD is required to create the cluster" >&2; exit 1; }
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  "$bin/initdb" -D "$data" -U "$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 -E UTF8 >/dev/null
  rm -f "$pwfile"
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$data/pg_hba.conf"
  echo "host all all ::/0 scram-sha-256" >>"$data/pg_hba.conf"
  "$bin/pg_ctl" -D "$data" -o "-c listen_addresses=''" -w start >/dev/null
  "$bin/createdb" -U "$user" "${POSTGRES_DB:-deerflow}"
  "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null
fi
exec "$bin/postgres" -D "$data" -c listen_addresses='*' -c unix_socket_directories=/run/postgresql "$@"
