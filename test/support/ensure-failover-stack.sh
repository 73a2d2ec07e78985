#!/usr/bin/env bash
# test/faults/patroni-failover.test.ts runs Docket on a highly available
# PostgreSQL the way production does: Debian's etcd, two PostgreSQL 15
# servers under Patroni and HAProxy in front of the leader;
# test/pgbouncer.test.ts runs it through Debian's PgBouncer; and
# test/replicas-behind-nginx.test.ts runs replicas of every service behind
# Debian's nginx, with HAProxy's port switch before it (`docket dev
# --replicas`). Installs the packages when missing; `npm test` runs this
# first, and so does .ci/run.
set -euo pipefail
if [ -x /usr/bin/patroni ] && [ -x /usr/bin/etcd ] && [ -x /usr/sbin/haproxy ] &&
  [ -x /usr/lib/postgresql/15/bin/postgres ] && [ -x /usr/sbin/pgbouncer ] && [ -x /usr/sbin/nginx ]; then
  exit 0
fi
exec bash "$(dirname "$0")/apt-install.sh" "the failover, PgBouncer and nginx front tests" patroni etcd-server haproxy postgresql-15 pgbouncer nginx
