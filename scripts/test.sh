#!/usr/bin/env bash
# Every test: the notebooks' own test cells (browser cells included) and the pytest suites in tests/, in webmix's own
# environment (.venv, or $WEBMIX_VENV). The pytest files run two at a time (pytest-xdist, a file's tests together on one
# worker: its module fixtures are made once): the browser tests leave a core idle a third of the time, waiting on pages,
# servers and timeouts. WEBMIX_TEST_WORKERS sets how many (1: one at a time).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
status=0
echo "== notebook tests (nbdev-test --flags slow)"
nbdev-test --flags slow --n-workers 1 || status=1
echo "== pytest tests/"
python -m pytest tests -q -p no:cacheprovider --durations=40 -n "${WEBMIX_TEST_WORKERS:-2}" --dist loadfile
rc=$?
if [ $rc -eq 5 ]; then echo "pytest collected no tests: that is a failure here"; status=1
elif [ $rc -ne 0 ]; then status=1; fi
[ $status -eq 0 ] && echo "ALL TESTS PASSED" || echo "TESTS FAILED"
exit $status
