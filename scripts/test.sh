#!/usr/bin/env bash
# Every test: the notebooks' own test cells (browser cells included) and the pytest suites in tests/, in webmix's own
# environment (.venv, or $WEBMIX_VENV).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
status=0
echo "== notebook tests (nbdev-test --flags slow)"
nbdev-test --flags slow --n-workers 1 || status=1
echo "== pytest tests/"
python -m pytest tests -q -p no:cacheprovider --durations=40
rc=$?
if [ $rc -eq 5 ]; then echo "pytest collected no tests: that is a failure here"; status=1
elif [ $rc -ne 0 ]; then status=1; fi
[ $status -eq 0 ] && echo "ALL TESTS PASSED" || echo "TESTS FAILED"
exit $status
