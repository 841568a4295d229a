"""The size of the path-dependent game on oblique paths (docs/explain.md, "Why an oblique
tree costs more"): per leaf of RF's and SPORF's fully grown regression trees on
``benches/shap_bench.py``'s training data (its ``data``: ``make_regression``, 5,000 x 20,
float32), the distinct features
of its path, its multi-feature splits, and the distinct unions of their feature sets (the
terms the exact values multiply out, before any is dropped for the explained row; the
count stops growing past 70,000).

    python benches/shap_terms.py [--trees 4]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shap_bench import data  # noqa: E402  (benches/shap_bench.py)

import obliqueforest as of  # noqa: E402
from obliqueforest.interpret import split_rules  # noqa: E402


def path_sizes(model, tree):
    """(distinct features, multi-feature splits, terms) per leaf of one tree."""
    rules = split_rules(model, tree)
    out = []
    stack = [(0, frozenset(), frozenset([0]), 0)]
    while stack:
        node, features, unions, k = stack.pop()
        rule = rules[node]
        if rule["is_leaf"]:
            out.append((len(features), k, len(unions)))
            continue
        split = frozenset(rule["features"])
        if len(split) > 1:
            k += 1
            if len(unions) < 70_000:
                mask = sum(1 << j for j in split)
                unions = unions | {u | mask for u in unions}
        for child in (rule["left"], rule["right"]):
            stack.append((child, features | split, unions, k))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, default=4)
    args = parser.parse_args(argv)
    X, y, _ = data("regression", 5000, 500, 20)  # shap_bench.py's defaults
    for name, cls in (("RF", of.RandomForestRegressor), ("SPORF", of.SPORFRegressor)):
        model = cls(n_estimators=args.trees, random_state=0).fit(X, y)
        sizes = np.array([s for t in range(args.trees) for s in path_sizes(model, t)])
        d, k, terms = sizes.T
        print(
            f"{name}: {len(sizes):,} leaves; distinct features a path: mean {d.mean():.1f}; "
            f"multi-feature splits: mean {k.mean():.1f}, max {k.max()}; terms: mean "
            f"{terms.mean():.0f}, median {statistics.median(terms):.0f}, "
            f"90% {np.quantile(terms, 0.9):.0f}, max {terms.max():,}"
        )


if __name__ == "__main__":
    main()
