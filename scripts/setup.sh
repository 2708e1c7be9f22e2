#!/usr/bin/env bash
# Installs what webmix needs on a fresh Debian machine (run as root): Debian's Chromium, and the package with its
# dev extras. Idempotent: a second run installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian's chromium ..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
# .setup-done holds the hash of the pyproject.toml installed (nbdev rewrites the file unchanged, so not its mtime)
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if ! python -c "import webmix, browser_use, nbdev, jupytext, pytest, ray" >/dev/null 2>&1 || [ "$(cat .setup-done 2>/dev/null)" != "$want" ]; then
  echo "installing webmix and its dependencies ..."
  python -m pip install -q --disable-pip-version-check -e ".[dev]"
  echo "$want" > .setup-done
fi
