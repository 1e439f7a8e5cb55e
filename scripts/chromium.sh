#!/usr/bin/env bash
# Finds a Chromium for the console's browser tests and prints its path on
# stdout, installing Debian's chromium package when none is present.
# Usage: export CHROME_PATH="$(scripts/chromium.sh)"
set -euo pipefail

find_chromium() {
  for name in chromium chromium-browser google-chrome; do
    command -v "$name" >/dev/null 2>&1 && { command -v "$name"; return 0; }
  done
  return 1
}

if ! path=$(find_chromium); then
  echo "chromium.sh: installing the chromium package" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 && apt-get install -y -qq chromium >&2
  path=$(find_chromium)
fi
echo "$path"
