#!/usr/bin/env bash
# test/console.test.ts drives the web console in Debian's Chromium
# (/usr/bin/chromium) through playwright-core, which downloads no browser.
# Installs the package when it is missing; `npm test` runs this first, and
# so does .ci/run.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "the console's browser test needs Debian's Chromium: sudo apt-get install -y chromium" >&2
  exit 1
fi
echo "==> apt-get install chromium (for the console's browser test)"
apt-get update
apt-get install -y chromium
