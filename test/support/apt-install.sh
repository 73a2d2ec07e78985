#!/usr/bin/env bash
# `apt-install.sh <what needs them> <package>...`: installs Debian packages
# a test needs, for the test/support/ensure-*.sh scripts (which call it only
# when something is missing). As root it runs apt-get; otherwise it names
# the command to run and fails.
set -euo pipefail
what="$1"
shift
if [ "$(id -u)" != 0 ]; then
  echo "$what needs Debian packages: sudo apt-get install -y $*" >&2
  exit 1
fi
echo "==> apt-get install $* (for $what)"
apt-get update
apt-get install -y "$@"
