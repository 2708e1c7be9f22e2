#!/usr/bin/env bash
# Installs what webmix needs on a fresh Debian machine: Debian's Chromium (as root, with apt-get), and the project's
# own virtual environment ($WEBMIX_VENV, default .venv in the checkout) holding webmix with its dev extras, every
# dependency at the version requirements.lock pins. The system interpreter's site-packages are never written to.
# Idempotent: when pyproject.toml, the lock, the checkout and the Python are what the environment was built from,
# a second run installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
PIP_VERSION=26.3   # the pip the environment installs with: Python 3.11's bundled 23.2.1 cannot resolve ray's extras
venv="${WEBMIX_VENV:-$PWD/.venv}"
python="${WEBMIX_PYTHON:-python3}"

chromium="${WEBMIX_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's chromium ..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "webmix needs Chromium at $chromium: install Debian's chromium package (as root: apt-get install chromium)," \
         "or set WEBMIX_CHROMIUM to a Chromium binary" >&2
    exit 1
  fi
fi

command -v "$python" >/dev/null 2>&1 || { echo "webmix needs Python 3.11 or newer as $python (or set WEBMIX_PYTHON)" >&2; exit 1; }
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
  { echo "webmix needs Python 3.11 or newer; $python is $("$python" --version 2>&1)" >&2; exit 1; }

# what the environment is built from: the stamp inside it says whether it still is
want=$( { cat pyproject.toml requirements.lock; echo "$PWD $PIP_VERSION"; "$python" --version; } | sha256sum | cut -d' ' -f1)
stamp="$venv/.webmix-setup"
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then exit 0; fi

if [ ! -x "$venv/bin/python" ]; then
  echo "making webmix's environment in $venv ..."
  "$python" -m venv "$venv"
fi
echo "installing webmix and its dependencies from requirements.lock into $venv (a few minutes the first time) ..."
rm -f "$stamp"   # a failed install below leaves no stamp, so the next run tries again
log="$venv/setup.log"   # pip's and the build's chatter; its last lines are shown when the install fails
pip() { "$venv/bin/python" -m pip --disable-pip-version-check "$@" >>"$log" 2>&1 ||
          { tail -25 "$log" >&2; echo "installing into $venv failed (pip $*); the whole log: $log" >&2; exit 1; }; }
: > "$log"
pip install --upgrade "pip==$PIP_VERSION"
pip install -e ".[dev]" -c requirements.lock
echo "$want" > "$stamp"
