#!/usr/bin/env bash
# Creates a virtual environment in which benches/compare.py can time treeple's SPORF
# (model key treeple_sporf) next to obliqueforest and scikit-learn.
#
# treeple's compiled trees are built against one scikit-learn series: treeple 0.10.3 imports
# only with scikit-learn 1.6.x (1.5 lacks sklearn.utils.validation._check_n_features, later
# releases fail with a binary incompatibility), so it gets its own environment rather than
# the development one.
#
# Usage:
#   benches/setup_treeple_env.sh [REPO] [VENV]
#     REPO  obliqueforest checkout to build (default: the checkout holding this script)
#     VENV  environment to create (default: /tmp/tpenv); must not exist yet
#   then, e.g.
#     VENV/bin/python REPO/benches/compare.py --sizes 1000 --datasets sparse_parity orthant \
#         --json /tmp/compare_treeple.json
#
# Environment: PYTHON (interpreter for the venv, default python3), CARGO_TARGET_DIR (Rust build
# directory, default VENV/cargo-target, so the checkout's own target/ and its build lock are
# left alone), CARGO_BUILD_JOBS (default 1), SKLEARN_VERSION (1.6.1), TREEPLE_VERSION (0.10.3).
# The extension is built once, from the working tree as it is (uncommitted edits included).
set -euo pipefail

REPO=$(cd "${1:-$(dirname "$0")/..}" && pwd)
VENV=${2:-/tmp/tpenv}
PYTHON=${PYTHON:-python3}
SKLEARN_VERSION=${SKLEARN_VERSION:-1.6.1}
TREEPLE_VERSION=${TREEPLE_VERSION:-0.10.3}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$VENV/cargo-target}
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}

if [ ! -f "$REPO/pyproject.toml" ] || [ ! -f "$REPO/Cargo.toml" ]; then
    echo "not an obliqueforest checkout: $REPO" >&2
    exit 2
fi
if [ -e "$VENV" ]; then
    echo "$VENV exists; remove it or pass another path" >&2
    exit 2
fi

"$PYTHON" -m venv "$VENV"
# one resolver run, so treeple's scikit-learn>=1.6.0 cannot pull in a newer, incompatible release
"$VENV/bin/pip" install "scikit-learn==$SKLEARN_VERSION" "treeple==$TREEPLE_VERSION" maturin

WHEELS=$(mktemp -d)
trap 'rm -rf "$WHEELS"' EXIT
locked=()
[ -f "$REPO/Cargo.lock" ] && locked=(--locked)
"$VENV/bin/maturin" build --release "${locked[@]}" -m "$REPO/Cargo.toml" \
    -i "$VENV/bin/python" -o "$WHEELS"
# the wheel's own requirements (numpy, scipy, scikit-learn>=1.4) are already met: pip keeps the pin
"$VENV/bin/pip" install "$WHEELS"/obliqueforest-*.whl

cd "$VENV"  # import from the environment, not from the checkout
"$VENV/bin/python" - <<'EOF'
import numpy as np
import sklearn
import treeple
from treeple import ObliqueRandomForestClassifier

import obliqueforest as of
from obliqueforest import datasets

X, y = datasets.make_orthant(300, n_features=6, random_state=0)
X = X.astype(np.float32)
for est in (
    of.SPORFClassifier(n_estimators=5, random_state=0),
    ObliqueRandomForestClassifier(
        n_estimators=5, max_features=1.0, feature_combinations=3.0, random_state=0
    ),
):
    est.fit(X, y).predict_proba(X)
print(
    f"ok: scikit-learn {sklearn.__version__}, treeple {treeple.__version__}, "
    f"obliqueforest {of.__version__} from {of.__file__}"
)
EOF
