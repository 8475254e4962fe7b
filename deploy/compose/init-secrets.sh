#!/bin/sh
# docker-compose.yml's one-shot service `secrets`, run before PostgreSQL and the gateway start, every
# time: makes sure the database password and the metrics token exist, generating each once, and hands
# them to both sides. Usage: init-secrets.sh APP_DATA POSTGRES_SECRET
#   APP_DATA         the gateway's data volume (its DATA_DIR, /app/.data in the app container)
#   POSTGRES_SECRET  PostgreSQL's own small volume (POSTGRES_PASSWORD_FILE points into it)
# POSTGRES_PASSWORD and METRICS_TOKEN, when set (from .env), are used instead of generated values.
# OWNER (default 1000:1000, the image's `node` user) is given what the gateway reads and writes.
set -eu

app_data=$1
postgres_secret=$2
owner=${OWNER:-1000:1000}
umask 077

# 43 characters of [A-Za-z0-9]: about 256 bits, and nothing that needs quoting anywhere.
generate() {
  LC_ALL=C tr -dc 'A-Za-z0-9' </dev/urandom | head -c 43
}

# keep FILE VALUE: VALUE when given, else what FILE already holds, else a new value; never empty.
keep() {
  if [ -n "$2" ]; then
    printf '%s' "$2" >"$1"
  elif [ ! -s "$1" ]; then
    generate >"$1"
  fi
}

keep "$postgres_secret/postgres-password" "${POSTGRES_PASSWORD:-}"
keep "$app_data/metrics-token" "${METRICS_TOKEN:-}"
password=$(cat "$postgres_secret/postgres-password")
token=$(cat "$app_data/metrics-token")

# The values go into a .env file in single quotes, which cannot hold a single quote or a line break.
case "$password$token" in
  *"'"* | *'
'*)
    echo "init-secrets: POSTGRES_PASSWORD and METRICS_TOKEN must not contain a single quote or a line break" >&2
    exit 1
    ;;
esac

# The gateway, its CLI and its migration command load /app/.env, which the image links to DATA_DIR/.env;
# variables set in the container's environment (.env of the project included) win over it.
cat >"$app_data/.env" <<ENV
# Written by docker compose's service 'secrets' on every start: change the values in the project's .env.
PGPASSWORD='$password'
METRICS_TOKEN='$token'
ENV

chown "$owner" "$app_data" "$app_data/metrics-token" "$app_data/.env"
echo "init-secrets: database password and metrics token in place"
