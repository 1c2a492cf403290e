#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers for the store tests and prints its admin URL
# (a role that may CREATE DATABASE; each test run creates and drops its own databases).
#
#   scripts/pg.sh            # prints e.g. postgres://postgres@127.0.0.1:5432/postgres
#
# $RESPONSES_GATEWAY_TEST_POSTGRES_URL, when set, is used as is (and must answer).
# Otherwise the machine's server at 127.0.0.1:5432 (user postgres, trust auth) is used;
# when it does not answer, the local cluster is started (pg_ctlcluster), and when there is
# none, Debian's postgresql package is installed and its cluster started with trust auth
# for 127.0.0.1. Progress goes to stderr; exit code 1 with a message if nothing works.
set -euo pipefail

given="${RESPONSES_GATEWAY_TEST_POSTGRES_URL:-}"
url="${given:-postgres://postgres@127.0.0.1:5432/postgres}"

if ! command -v psql >/dev/null 2>&1; then
  echo "pg.sh: installing the PostgreSQL client (psql)" >&2
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-client >&2
fi

answers() { psql "$url" -Atqc 'select 1' >/dev/null 2>&1; }
wait_answer() {
  for _ in $(seq 1 60); do
    answers && return 0
    sleep 0.5
  done
  return 1
}

if answers; then
  echo "$url"
  exit 0
fi
if [ -n "$given" ]; then
  echo "pg.sh: no PostgreSQL answers at \$RESPONSES_GATEWAY_TEST_POSTGRES_URL" >&2
  exit 1
fi

if ! ls -d /etc/postgresql/*/main >/dev/null 2>&1; then
  echo "pg.sh: no PostgreSQL cluster here; installing Debian's postgresql" >&2
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
  ver="$(ls /etc/postgresql | sort -V | tail -1)"
  hba="/etc/postgresql/$ver/main/pg_hba.conf"
  # The tests connect over TCP as postgres without a password, as on the CI machines.
  sed -i '1i host all postgres 127.0.0.1/32 trust' "$hba"
fi
ver="$(ls /etc/postgresql | sort -V | tail -1)"
echo "pg.sh: starting PostgreSQL $ver (cluster main)" >&2
pg_ctlcluster --skip-systemctl-redirect "$ver" main start >&2 || true
if wait_answer; then
  echo "$url"
  exit 0
fi
echo "pg.sh: PostgreSQL does not answer at 127.0.0.1:5432 after starting it; see /var/log/postgresql/" >&2
exit 1
