#!/usr/bin/env bash
# Builds the docs site into _site/ (or $1) with MkDocs: every notebook in nbs/ as a page with its saved outputs, and an API
# reference. Offline and quick: nothing is executed or fetched. Serve it with: python -m http.server -d _site
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
python docs/build.py --out "${1:-_site}"
