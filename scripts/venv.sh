# Sourced by the scripts that run webmix: installs what it needs (scripts/setup.sh) and puts its environment
# ($WEBMIX_VENV, default .venv) first on PATH, as `source .venv/bin/activate` does.
WEBMIX_VENV="${WEBMIX_VENV:-$PWD/.venv}"
export WEBMIX_VENV
bash scripts/setup.sh || exit 1
export VIRTUAL_ENV="$WEBMIX_VENV" PATH="$WEBMIX_VENV/bin:$PATH"
hash -r
