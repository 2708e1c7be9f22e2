#!/usr/bin/env bash
# The main job on the embedded default: no model server, no network.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec webmix main "$@"
