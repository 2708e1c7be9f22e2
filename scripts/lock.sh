#!/usr/bin/env bash
# Writes requirements.lock from pyproject.toml: webmix's dependencies and its dev and rl extras, direct and transitive, each
# pinned to one version, for Python 3.11 on x86_64 Linux (uv pip compile). Run it after changing a dependency in
# pyproject.toml and commit both files. uv keeps every version already in the lock that pyproject.toml still allows,
# so a run with nothing changed changes nothing; `--upgrade` takes the newest versions allowed instead.
# `--check` writes nothing and fails when the lock is not what pyproject.toml asks for (CI runs it).
# No hashes: pip refuses an editable install in hash-checking mode, and `pip install -e ".[dev]" -c requirements.lock`
# is how webmix goes into an environment of one's own.
set -euo pipefail
cd "$(dirname "$0")/.."
UV_VERSION=0.13.9
uv=".cache/uv-$UV_VERSION/bin/uv"
if [ ! -x "$uv" ]; then   # a pinned uv in an ignored folder, installed with any pip: uv is one static binary
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps --target ".cache/uv-$UV_VERSION" "uv==$UV_VERSION"
fi
compile() {  # $1: the file to write; the rest go to uv
  local out=$1; shift
  "$uv" pip compile pyproject.toml --extra dev --extra rl --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
    --custom-compile-command "bash scripts/lock.sh" --quiet -o "$out" "$@"
}
case "${1:-}" in
  --check)
    tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
    cp requirements.lock "$tmp"
    compile "$tmp"
    diff -u requirements.lock "$tmp" >&2 || { echo "requirements.lock disagrees with pyproject.toml: run bash scripts/lock.sh and commit it" >&2; exit 1; } ;;
  --upgrade) compile requirements.lock --upgrade ;;
  "") compile requirements.lock ;;
  *) echo "usage: bash scripts/lock.sh [--check | --upgrade]" >&2; exit 2 ;;
esac
