"""Time of obliqueforest's TreeExplainer against shap's TreeExplainer and YDF's predict_shap.

On one seeded ``make_regression`` and one seeded binary ``make_classification`` data set
(training rows and explained rows drawn together, the explained rows held out), with
forests of the same tree count at their defaults but the trees, the threads and the seed:

a. path-dependent SHAP of our ``RandomForest*`` by ``obliqueforest.explain.TreeExplainer``
   against ``shap.TreeExplainer`` on the *same trees* (ours converted to shap's dict model:
   thresholds, children, missing-value defaults, node values / n_trees, training cover),
   with the largest absolute difference of the values (``--rows`` rows);
b. path-dependent SHAP of ``SPORF*`` (defaults) against our RF's time on the same rows,
   and how many (row, tree) explanations were estimated instead of exact
   (``n_estimated_``) (``--oblique-rows`` rows: fully grown regression trees of SPORF
   explain some 40 times slower than RF's, a few seconds a row for 100 trees);
c. interventional SHAP with ``--background`` background rows: ours against shap's on the
   axis forest (``--interventional-rows`` rows), ours for SPORF against our RF
   (``--oblique-rows`` rows; (row, tree, background row) estimates counted);
d. YDF (``ydf.RandomForestLearner``, fully grown like ours) and its sparse oblique forest
   (``split_axis="SPARSE_OBLIQUE"``, set to SPORF's defaults as benches/scale.py sets it):
   ``model.predict_shap`` on the rows of (a) and (b), against ours on RF and SPORF. YDF's
   trees are not ours, so their sizes (leaves per tree) are printed with the table.

Each timing runs alone, one after the other, in one process (``time.perf_counter``, wall
seconds; the best of ``--repeats`` runs, 1 by default: most timings here are long). Ours
and YDF use ``--n-jobs`` threads (2 by default, the two cores of the machine the results
were recorded on); shap's TreeSHAP (its C extension) runs on one thread whatever the
machine, so ours is also timed with ``n_jobs=1`` against it. Writes a Markdown table
naming the commit, the command, the date and the load average (about 8 minutes on two
cores at the defaults).

    python benches/shap_bench.py --out benches/results/shap.md   # 5,000 x 20, 100 trees
    python benches/shap_bench.py --quick                         # a smoke run, seconds
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import make_classification, make_regression

import obliqueforest as of
from obliqueforest.explain import TreeExplainer

TASKS = {
    "regression": (of.RandomForestRegressor, of.SPORFRegressor),
    "classification": (of.RandomForestClassifier, of.SPORFClassifier),
}


def data(task, n, rows, p, seed=0):
    """Training rows and held-out rows to explain, float32 as the forests read them."""
    if task == "regression":
        X, y = make_regression(n + rows, p, n_informative=p // 2, noise=10.0, random_state=seed)
    else:
        X, y = make_classification(
            n + rows, p, n_informative=p // 2, n_redundant=p // 4, random_state=seed
        )
    X = X.astype(np.float32)
    return X[:n], y[:n], X[n:]


def timed(f, repeats):
    """Best wall seconds of ``repeats`` calls, and the last result."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def ours(model, X, n_jobs, background=None):
    """Our explainer's values (warnings of estimated explanations kept quiet: they are
    counted in the table) and its estimate count."""
    explainer = TreeExplainer(model, data=background, n_jobs=n_jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        values = explainer.shap_values(X)
    return np.asarray(values), explainer.n_estimated_


def shap_model(model):
    """Our axis-aligned forest as shap's dict model: the same trees, node for node."""
    forest = model._forest
    n_trees = forest.n_trees
    trees = []
    for t in range(n_trees):
        nodes = forest.tree_nodes(t)
        left, right, ptr = nodes["left"], nodes["right"], nodes["proj_ptr"]
        inner = left >= 0
        if np.any(np.diff(ptr)[inner] != 1) or np.any(nodes["proj_weights"] != 1.0):
            raise ValueError("shap's dict model takes axis-aligned trees only")
        features = np.full(left.shape[0], -2, dtype=np.int64)
        features[inner] = nodes["proj_features"][ptr[:-1][inner]]
        default = np.where(nodes["missing_go_to_left"].astype(bool), left, right)
        trees.append(
            dict(
                children_left=left,
                children_right=right,
                children_default=default,
                features=features,
                thresholds=nodes["threshold"],
                values=nodes["value"] / n_trees,
                node_sample_weight=nodes["weighted_n_node_samples"],
            )
        )
    return {
        "trees": trees,
        "base_offset": 0.0,
        "tree_output": "raw_value",
        "objective": "squared_error",
        "input_dtype": np.float32,
        "internal_dtype": np.float64,
    }


def leaves_per_tree(model):
    forest = model._forest
    return np.mean([np.sum(forest.tree_nodes(t)["left"] < 0) for t in range(forest.n_trees)])


def ydf_frame(X, y=None):
    frame = {f"x{j}": X[:, j] for j in range(X.shape[1])}
    if y is not None:
        frame["y"] = y
    return frame


def ydf_fit(task, oblique, X, y, trees, n_jobs):
    """YDF's random forest grown as ours: fully grown, leaves of one row, our d for the
    axis forest (p for regression, sqrt(p) for classification), averaged probabilities;
    the sparse oblique one with SPORF's d = 2p, 1.5 features, signs, scaled."""
    import ydf

    p = X.shape[1]
    kw = dict(
        label="y",
        task=ydf.Task.REGRESSION if task == "regression" else ydf.Task.CLASSIFICATION,
        num_trees=trees,
        max_depth=-1,
        min_examples=1,
        num_threads=n_jobs,
        random_seed=0,
    )
    if task == "regression":
        kw["num_candidate_attributes_ratio"] = 1.0
    else:
        kw["winner_take_all"] = False
    if oblique:
        kw.update(
            split_axis="SPARSE_OBLIQUE",
            sparse_oblique_num_projections_exponent=float(np.log(2 * p) / np.log(p)),
            sparse_oblique_max_num_projections=2 * p,
            sparse_oblique_projection_density_factor=1.5,
            sparse_oblique_weights="BINARY",
            sparse_oblique_normalization="STANDARD_DEVIATION",
        )
    model = ydf.RandomForestLearner(**kw).train(ydf_frame(X, y), verbose=0)
    return model, (model.num_nodes() + model.num_trees()) / 2 / model.num_trees()


def ydf_shap(model, X, n_jobs):
    values, _ = model.predict_shap(ydf_frame(X), num_threads=n_jobs)
    return np.stack([values[f"x{j}"] for j in range(X.shape[1])], axis=1)


def ydf_oblique_game(seed=0):
    """Which game YDF's predict_shap plays on a sparse oblique tree: its values for one
    small tree (3 features, depth 4) against the exact Shapley values, by all 8
    coalitions, of the path-dependent game (i) as obliqueforest defines it (a split is
    followed when all of its features are known, else by cover) and (ii) with each split
    read as a split on its first feature alone. Returns the largest differences."""
    import ydf

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    y = X[:, 0] + 2 * X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=300)
    model = ydf.RandomForestLearner(
        label="y",
        task=ydf.Task.REGRESSION,
        num_trees=1,
        max_depth=4,
        split_axis="SPARSE_OBLIQUE",
        bootstrap_training_dataset=False,
        random_seed=1,
    ).train(ydf_frame(X, y), verbose=0)
    root, cols = model.get_tree(0).root, list(model.input_features_col_idxs())

    def value(node, x, known, rule):
        if node.is_leaf:
            return node.value.value
        cond = node.condition
        feats = [cols.index(a) for a in cond.attributes]
        if rule(feats, known):
            pos = float(np.dot(cond.weights, x[feats])) >= cond.threshold
            return value(node.pos_child if pos else node.neg_child, x, known, rule)
        a, b = node.pos_child.value.num_examples, node.neg_child.value.num_examples
        return (
            a * value(node.pos_child, x, known, rule) + b * value(node.neg_child, x, known, rule)
        ) / (a + b)

    def shapley(x, rule, p=3):
        phi = np.zeros(p)
        for i in range(p):
            for mask in range(2**p):
                if mask >> i & 1:
                    continue
                known = {j for j in range(p) if mask >> j & 1}
                k = len(known)
                w = math.factorial(k) * math.factorial(p - k - 1) / math.factorial(p)
                phi[i] += w * (value(root, x, known | {i}, rule) - value(root, x, known, rule))
        return phi

    rows = X[::30]
    got = ydf_shap(model, rows, 1)
    all_known = np.array([shapley(x, lambda f, s: all(j in s for j in f)) for x in rows])
    first = np.array([shapley(x, lambda f, s: f[0] in s) for x in rows])
    return np.abs(got - all_known).max(), np.abs(got - first).max()


def fmt(seconds):
    return "–" if seconds is None else f"{seconds:.2f}"


def ratio(a, b):
    return "–" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def run_task(task, args, rows, notes):
    """The table rows of one task."""
    rf_cls, sporf_cls = TASKS[task]
    X, y, X_explain = data(task, args.n, args.rows, args.p)
    X_oblique = X_explain[: args.oblique_rows]
    X_int = X_explain[: args.interventional_rows]
    background = X[: args.background]
    common = dict(n_estimators=args.trees, n_jobs=args.n_jobs, random_state=0)
    rf = rf_cls(**common).fit(X, y)
    sporf = sporf_cls(**common).fit(X, y)
    size = {"RF": leaves_per_tree(rf), "SPORF": leaves_per_tree(sporf)}
    r, ro, ri, bg = X_explain.shape[0], X_oblique.shape[0], X_int.shape[0], args.background

    def row(what, n_rows, t2, t1, other, t_other, diff="–", estimated="–"):
        line = (
            f"| {task} | {what} | {n_rows} | {fmt(t2)} | {fmt(t1)} | {other} | {fmt(t_other)} "
            f"| {ratio(t2, t_other)} | {ratio(t1, t_other)} | {diff} | {estimated} |"
        )
        rows.append(line)
        print(line, flush=True)

    def ours_timed(model, X_rows, n_jobs=args.n_jobs, background=None):
        return timed(lambda: ours(model, X_rows, n_jobs, background), args.repeats)

    # a. path-dependent, RF against shap on the same trees
    t_rf, (v_rf, est_rf) = ours_timed(rf, X_explain)
    t_rf1, _ = ours_timed(rf, X_explain, 1)
    t_shap = diff = None
    if not args.skip_shap:
        import shap

        model_dict = shap_model(rf)
        explainer = shap.TreeExplainer(model_dict)
        t_shap, v_shap = timed(lambda: explainer.shap_values(X_explain), args.repeats)
        v_shap = np.asarray(v_shap)
        if v_shap.shape != v_rf.shape:
            notes.append(f"{task}: shap's values have shape {v_shap.shape}, ours {v_rf.shape}")
            diff = "shape differs"
        else:
            diff = f"{np.abs(v_shap - v_rf).max():.1e}"
        gap = np.abs(
            np.asarray(explainer.expected_value) - np.asarray(TreeExplainer(rf).expected_value)
        ).max()
        notes.append(
            f"{task}: the expected values of ours and shap's path-dependent game differ by "
            f"{gap:.1e}"
        )
    row("RF path-dependent", r, t_rf, t_rf1, "shap, same trees", t_shap, diff or "–", est_rf)

    # b. path-dependent, SPORF against our RF on the same rows
    t_sp, (_, est_sp) = ours_timed(sporf, X_oblique)
    t_rf_o, _ = ours_timed(rf, X_oblique)
    row(
        "SPORF path-dependent",
        ro,
        t_sp,
        None,
        "our RF, path-dependent",
        t_rf_o,
        estimated=f"{est_sp} of {ro * args.trees}",
    )

    # c. interventional, RF against shap, and SPORF against our RF
    t_irf, (v_irf, est_irf) = ours_timed(rf, X_int, background=background)
    t_irf1, _ = ours_timed(rf, X_int, 1, background)
    t_shap_int = diff_int = None
    if not args.skip_shap:
        explainer = shap.TreeExplainer(
            model_dict, data=background, feature_perturbation="interventional"
        )
        t_shap_int, v_shap_int = timed(lambda: explainer.shap_values(X_int), args.repeats)
        v_shap_int = np.asarray(v_shap_int)
        diff_int = (
            f"{np.abs(v_shap_int - v_irf).max():.1e}"
            if v_shap_int.shape == v_irf.shape
            else "shape differs"
        )
        pred = rf._forest.predict(X_int, 1)
        pred = pred[:, 0] if v_shap_int.ndim == 2 else pred
        expected_ours = np.asarray(TreeExplainer(rf, data=background).expected_value)
        local = np.abs(v_shap_int.sum(axis=1) + np.asarray(explainer.expected_value) - pred).max()
        local_ours = np.abs(v_irf.sum(axis=1) + expected_ours - pred).max()
        notes.append(
            f"{task}: interventional local accuracy (largest |sum of values + expected value "
            f"- prediction|): shap {local:.1e}, ours {local_ours:.1e}; the predictions range "
            f"over ±{np.abs(pred).max():.3g}"
        )
    row(
        f"RF interventional ({bg} bg)",
        ri,
        t_irf,
        t_irf1,
        "shap, same trees",
        t_shap_int,
        diff_int or "–",
        est_irf,
    )
    t_isp, (_, est_isp) = ours_timed(sporf, X_oblique, background=background)
    t_irf_o, _ = ours_timed(rf, X_oblique, background=background)
    row(
        f"SPORF interventional ({bg} bg)",
        ro,
        t_isp,
        None,
        "our RF, interventional",
        t_irf_o,
        estimated=f"{est_isp} of {ro * args.trees * bg}",
    )

    # d. YDF's predict_shap on its own forests, against ours on the same rows
    if not args.skip_ydf:
        try:
            cases = ((False, "RF", X_explain, t_rf), (True, "SPORF", X_oblique, t_sp))
            for oblique, name, X_rows, t_ours in cases:
                model, leaves = ydf_fit(task, oblique, X, y, args.trees, args.n_jobs)
                t_ydf, _ = timed(
                    lambda m=model, X_rows=X_rows: ydf_shap(m, X_rows, args.n_jobs),
                    args.repeats,
                )
                other = "YDF sparse oblique" if oblique else "YDF RF"
                size[other] = leaves
                row(
                    f"{name} path-dependent",
                    X_rows.shape[0],
                    t_ours,
                    None,
                    f"{other}, predict_shap",
                    t_ydf,
                )
        except Exception as e:  # an API this version lacks: say why and go on
            notes.append(f"{task}: YDF skipped: {type(e).__name__}: {e}")
            print(notes[-1], flush=True)
    notes.append(f"{task}: leaves per tree: " + ", ".join(f"{k} {v:,.0f}" for k, v in size.items()))
    print(notes[-1], flush=True)


def commit():
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="training rows (default 5000)")
    parser.add_argument("--p", type=int, default=20, help="features (default 20)")
    parser.add_argument(
        "--rows", type=int, default=500, help="rows the axis forests explain (default 500)"
    )
    parser.add_argument(
        "--oblique-rows",
        type=int,
        default=50,
        help="rows SPORF explains, and RF again for the ratio (default 50)",
    )
    parser.add_argument(
        "--interventional-rows",
        type=int,
        default=100,
        help="rows the axis forest explains in the interventional game (default 100)",
    )
    parser.add_argument("--background", type=int, default=100, help="background rows (100)")
    parser.add_argument("--trees", type=int, default=100, help="trees (default 100)")
    parser.add_argument("--n-jobs", type=int, default=2, help="threads, ours and YDF (2)")
    parser.add_argument("--repeats", type=int, default=1, help="best of (default 1)")
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--skip-shap", action="store_true")
    parser.add_argument("--skip-ydf", action="store_true")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 1,000 x 20, 10 trees, 100 rows (20 SPORF, 50 interventional, 20 "
        "background)",
    )
    parser.add_argument("--out", help="write the Markdown table here too")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.rows, args.trees = 1000, 100, 10
        args.oblique_rows, args.interventional_rows, args.background = 20, 50, 20

    if not args.skip_ydf:
        try:
            to_ours, to_first = ydf_oblique_game()
            notes_head = [
                "YDF's predict_shap on a sparse oblique tree (3 features, exact values by all "
                f"coalitions, 10 rows): largest difference {to_first:.1e} from the "
                "path-dependent game that reads each oblique split as a split on its first "
                f"feature alone, {to_ours:.1e} from the game obliqueforest explains (a split "
                "followed when all of its features are known): YDF's oblique values give a "
                "split's whole effect to one of its features, so its time is not that of the "
                "same game"
            ]
        except Exception as e:
            notes_head = [f"YDF's oblique game not checked: {type(e).__name__}: {e}"]
        print(notes_head[0], flush=True)
    else:
        notes_head = []

    load_before = os.getloadavg()
    started = time.perf_counter()
    rows, notes = [], list(notes_head)
    for task in args.tasks:
        run_task(task, args, rows, notes)
    total = time.perf_counter() - started
    load_after = os.getloadavg()

    command = "python benches/shap_bench.py " + " ".join(sys.argv[1:] if argv is None else argv)
    versions = []
    for name in ("shap", "ydf"):
        try:
            versions.append(f"{name} {__import__(name).__version__}")
        except ImportError:
            versions.append(f"{name} not installed")
    table = "\n".join(
        [
            "# SHAP: obliqueforest's TreeExplainer against shap and YDF",
            "",
            f"`{command.strip()}` at commit {commit()}, "
            f"{datetime.date.today().isoformat()}, on {os.cpu_count()} cores "
            f"({platform.machine()}, Python {platform.python_version()}, "
            f"{', '.join(versions)}); load average {load_before[0]:.2f} before, "
            f"{load_after[0]:.2f} after; {total:.0f} s in all.",
            "",
            f"Data: `make_regression` / binary `make_classification`, {args.n:,} training "
            f"rows x {args.p} features, explained rows held out; forests of {args.trees} "
            'trees at their defaults (YDF\'s grown as ours: see the script). "rows": the '
            "rows explained, the same for both sides of a ratio. Wall seconds "
            "(`time.perf_counter`), best of "
            f"{args.repeats} run(s), each timing alone. Ours and YDF on {args.n_jobs} "
            "threads (`n_jobs` / `num_threads`); shap's TreeSHAP runs on one thread, so ours "
            'is also timed with `n_jobs=1`. "max abs diff" compares ours with shap on the '
            'same trees (classifiers: class probabilities, both classes). "estimated": '
            "(row, tree) explanations, or (row, tree, background row) for the interventional "
            "game, that exceeded the exact bound (max_terms = 16384) and were sampled.",
            "",
            f"| task | explained | rows | ours, n_jobs={args.n_jobs} (s) | ours, n_jobs=1 (s) "
            "| against | its time (s) | ours / it | ours 1 thread / it | max abs diff "
            "| estimated |",
            "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|",
            *rows,
            "",
            *[f"- {note}" for note in notes],
        ]
    )
    print()
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n")


if __name__ == "__main__":
    main()
