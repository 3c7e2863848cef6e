#!/usr/bin/env bash
# The Kubeflow Pipelines SDK (`kfp`) in a venv of its own, cached outside the repo: create it on
# first use (from PyPI, about two minutes), then reuse it. Prints the venv's python.
#
#   hack/kfp-venv.sh                      (PYTHON=... picks the interpreter to base it on)
#
# kfp pins an older `kubernetes` than the operator, so it is never a dependency of the project.
# The tests that compile the pipeline example and run its compiled step use this venv
# (tests/unit/test_pipeline_kfp_compile.py, tests/integration/controller/test_pipeline_kfp_container.py).
# The version is pinned here, the one place: the newest 2.x on PyPI when written.
set -euo pipefail
KFP_VERSION=2.17.3
VENV="${TFJOB_KFP_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/tfjob-operator/kfp-$KFP_VERSION-venv}"
WANT="kfp==$KFP_VERSION"

# Parallel test workers (and a second checkout) may ask at once: one creates it, the others wait.
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9
if [ "$(cat "$VENV/.installed" 2>/dev/null || true)" != "$WANT" ]; then
  echo "kfp-venv: installing $WANT into $VENV" >&2
  "${PYTHON:-python3}" -m venv --clear "$VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$WANT" >&2
  printf '%s' "$WANT" > "$VENV/.installed"
fi
echo "$VENV/bin/python"
