#!/usr/bin/env bash
# test/console.test.ts drives the web console in Debian's Chromium
# (/usr/bin/chromium) through playwright-core, which downloads no browser.
# Installs the package when it is missing; `npm test` runs this first, and
# so does .ci/run.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
exec bash "$(dirname "$0")/apt-install.sh" "the console's browser test" chromium
