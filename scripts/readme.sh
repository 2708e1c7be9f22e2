#!/usr/bin/env bash
# README.md is rendered from nbs/index.ipynb (nbdev-readme needs Quarto, which cannot be installed here).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
# the notebook links its pictures relative to nbs/; the README sits one folder up
jupyter nbconvert --to markdown --log-level=ERROR --stdout nbs/index.ipynb | sed "s|](images/|](nbs/images/|g" > README.md
