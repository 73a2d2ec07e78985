#!/usr/bin/env bash
# test/faults/patroni-failover.test.ts runs Docket on a highly available
# PostgreSQL the way production does: Debian's etcd, two PostgreSQL 15
# servers under Patroni and HAProxy in front of the leader; and
# test/pgbouncer.test.ts runs it through Debian's PgBouncer. Installs the
# packages when missing; `npm test` runs this first, and so does .ci/run.
set -euo pipefail
if [ -x /usr/bin/patroni ] && [ -x /usr/bin/etcd ] && [ -x /usr/sbin/haproxy ] &&
  [ -x /usr/lib/postgresql/15/bin/postgres ] && [ -x /usr/sbin/pgbouncer ]; then
  exit 0
fi
exec bash "$(dirname "$0")/apt-install.sh" "the failover and PgBouncer tests" patroni etcd-server haproxy postgresql-15 pgbouncer
