#!/usr/bin/env bash
# The main job on the embedded default: no model server, no network. Runs in webmix's own environment (.venv).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
exec webmix main "$@"
