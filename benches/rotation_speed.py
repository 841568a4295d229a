"""Fit cost of a regularized rotation ensemble against plain forests of the same trees.

The method grows a micro-forest of U trees on each of R rotations, then the trees its
favoured rotations need beyond U: ``grown = R*U + sum(max(c_k - U, 0))`` trees for c_k
trees on rotation k, i.e. ``R*U + M - U`` when one rotation keeps all M trees (Sect. 7 of
Blaser & Fryzlewicz 2021). Per data set and weighting scheme, three fits alternate
``--repeat`` times (RF, ensemble, same trees, RF, ...), each timed as process CPU seconds
(``time.process_time``: all threads of the process; robust to other load on a shared
machine, which wall time is not) and as wall seconds:

* **RF**: this library's ``RandomForestClassifier`` with M trees (the same tree settings:
  gini, ``max_features="sqrt"``, fully grown, bootstrap) on the same data;
* **ensemble**: ``RotationEnsembleClassifier(M, n_rotations=R, micro_forest_size=U)``, a
  fresh clone fitted in each repeat (as RF is a fresh estimator: no fit of the three
  includes releasing an earlier model);
* **same trees**: the ensemble's very trees grown as plain core forests (each rotation's
  ``max(c_k, U)`` trees, same seed) on its rotated data, without out-of-bag records or any
  orchestration, in one ``Forest.fit_many`` call for all rotations (one ``Forest.fit``
  call per rotation for a version of the package without it): what these trees cost on
  these data. Trees grown on a rotation are often larger than on the original axes, so
  this can exceed the floor.

Reported, each as the median over the repeats of the per-repeat ratio:
``ens/RF``; ``ens/floor`` with ``floor = RF * grown / M`` (the plain forest's cost per tree
times the trees the method grows); ``same/floor``; ``ens/same`` (what the orchestration
and the micro-forests' out-of-bag records add to the trees themselves), in CPU and in wall
seconds (wall: idle cores between the method's phases count too).

The default data set is the 1,780-row, 13-feature one of issue 28: scikit-learn's wine
data repeated ten times, each value jittered by 1% of its feature's standard deviation
(seeded) so that no two rows coincide. ``--data waveform,classification`` adds Breiman's
waveform-21 (5000 rows) and ``make_classification`` (5000 x 20).

``--phases`` adds, per weighting, the median wall milliseconds of the ensemble's phases
(its methods, its two core calls, the rotated copies' product, the whole fit) over
``--repeat`` more fits. Run::

    python benches/rotation_speed.py --n-jobs 2 --repeat 7
    python benches/rotation_speed.py --n-jobs 2 --repeat 15 --phases
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import obliqueforest
from obliqueforest import RandomForestClassifier, _core
from obliqueforest.rotation import WEIGHTINGS, RotationEnsembleClassifier, rotate
from sklearn.base import clone
from sklearn.datasets import load_wine, make_classification
from sklearn.utils import check_random_state

from compare import library_build  # benches/compare.py


def datasets(names):
    from obliqueforest.datasets import make_waveform

    out = {}
    for name in names:
        if name == "wine1780":
            X, y = load_wine(return_X_y=True)
            X, y = np.tile(X, (10, 1)), np.tile(y, 10)
            jitter = np.random.default_rng(0).normal(scale=0.01, size=X.shape)
            out["wine x10 n=1780,p=13"] = (X + jitter * X.std(axis=0), y)
        elif name == "waveform":
            out["waveform n=5000,p=21"] = make_waveform(n_samples=5000, random_state=0)
        elif name == "classification":
            out["make_classification n=5000,p=20"] = make_classification(
                n_samples=5000, n_features=20, n_informative=10, n_redundant=5, random_state=0
            )
        else:
            raise SystemExit(f"unknown data set {name!r}")
    return out


def timed(fn):
    """(CPU seconds of the whole process, wall seconds) of one call, and its result."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = fn()
    return (time.process_time() - cpu, time.perf_counter() - wall), result


def same_trees(est, X, y, n_jobs):
    """The ensemble's trees as plain core forests: for each rotation, its max(c_k, U) trees
    in one core call (the fit's seed for that rotation) on the rotated data prepared
    beforehand, no out-of-bag records. Returns a function that grows them, or None for a
    version of the package that cannot (then the columns are NaN)."""
    R, U = est.n_rotations, est.micro_forest_size
    random_state = check_random_state(est.random_state)
    bound = np.iinfo(np.int32).max  # the fit's seeds: the rotations' first, then one each
    random_state.randint(bound)
    seeds = random_state.randint(bound, size=R)
    X_scaled = est._scale(np.asarray(X, dtype=np.float64))
    try:
        rotated = [rotate(X_scaled, est.rotations_[k], "F") for k in range(R)]
    except TypeError:  # a version before the order argument
        rotated = [rotate(X_scaled, est.rotations_[k]) for k in range(R)]
    codes = np.unique(y, return_inverse=True)[1].astype(np.float64)
    try:
        from obliqueforest._params import core_fields

        fields = core_fields(est)
    except ImportError:
        fields = None

    def params_of(n_trees, seed):
        if fields is not None:
            try:  # the estimator's core fields read once, as its fit reads them
                return est._core_params(fields, n_trees, n_jobs, seed, oob=False)
            except TypeError:
                pass
        return est._core_params(n_trees, n_jobs, seed, oob=False)  # an older version

    calls = []
    for k in range(R):
        n_trees = max(int(est.n_trees_per_rotation_[k]), U)
        try:
            calls.append((rotated[k], params_of(n_trees, seeds[k])))
        except TypeError:  # a version before the oob argument: no same-trees measure
            return None

    if hasattr(_core.Forest, "fit_many"):
        # one call for every rotation: the cheapest way the core grows these trees
        def grow():
            return _core.Forest.fit_many(rotated, codes, None, [params for _, params in calls])

        return grow

    def grow():
        return [_core.Forest.fit(X_rot, codes, None, params) for X_rot, params in calls]

    return grow


#: The ensemble's phases ``--phases`` times: its methods, then the core calls and the
#: product inside them (each entry's time includes those it calls).
PHASES = (
    "_plan_fit",
    "_grow_micro_forests",
    "_rotation_oob_errors",
    "_weight_rotations",
    "_complete_forests",
    "_fit_rotations",
)


def phase_times(est, X, y, repeat):
    """Median wall milliseconds of each of the ensemble's phases over ``repeat`` fits of
    fresh clones, timed with ``time.perf_counter`` around its methods (``PHASES``), its
    two core calls and the rotated copies' product, and the whole fit: where the fit's
    time beyond its trees goes. Wraps those functions for the duration only."""
    from obliqueforest import _rotation_base
    from obliqueforest._rotation_base import _BaseRotationEnsemble

    spent = {}

    def timing(name, fn):
        def timed_fn(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - start

        return timed_fn

    class Forest:  # the core class, its two batch calls timed
        fit_many = staticmethod(timing("core: micro-forests", _core.Forest.fit_many))
        fit_more_many = staticmethod(timing("core: completion", _core.Forest.fit_more_many))

    class Core:
        def __getattr__(self, name):
            return Forest if name == "Forest" else getattr(_core, name)

    saved = {name: _BaseRotationEnsemble.__dict__[name] for name in PHASES}
    saved_core, saved_rotate = _rotation_base._core, _rotation_base.rotate_columns
    rows = []
    try:
        for name in PHASES:
            setattr(_BaseRotationEnsemble, name, timing(name, saved[name]))
        _rotation_base._core = Core()
        _rotation_base.rotate_columns = timing("product (rotate_columns)", saved_rotate)
        for _ in range(repeat):
            spent.clear()
            fit = timing("whole fit", clone(est).fit)
            fit(X, y)
            rows.append(dict(spent))
    finally:
        for name, fn in saved.items():
            setattr(_BaseRotationEnsemble, name, fn)
        _rotation_base._core, _rotation_base.rotate_columns = saved_core, saved_rotate
    return {name: 1e3 * float(np.median([r.get(name, 0.0) for r in rows])) for name in rows[0]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-estimators", type=int, default=1000)
    parser.add_argument("--n-rotations", type=int, default=50)
    parser.add_argument("--micro-forest-size", type=int, default=10)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--weightings", default="exp,bst")
    parser.add_argument("--data", default="wine1780")
    parser.add_argument(
        "--phases",
        action="store_true",
        help="also time the ensemble's phases (median ms of --repeat fits; see phase_times)",
    )
    args = parser.parse_args(argv)
    M, R, U = args.n_estimators, args.n_rotations, args.micro_forest_size
    for weighting in args.weightings.split(","):
        if weighting not in WEIGHTINGS:
            raise SystemExit(f"unknown weighting {weighting!r}; one of {WEIGHTINGS}")

    print(
        f"fit_rotation_ensemble: M={M}, R={R}, U={U}, n_jobs={args.n_jobs}, "
        f"median of {args.repeat} alternating runs (RF, ensemble, same trees); "
        f"{library_build()}"
    )
    print(f"package: {Path(obliqueforest.__file__).parent}")
    print(f"command: python {' '.join(sys.argv)}")
    print("(CPU: process seconds, all threads; wall: seconds; ratios: median of per-run ratios)\n")
    print(
        f"{'data':<32}{'model':<6}{'grown':>6}{'floor':>7}"
        f"{'cpu: RF':>9}{'ens':>7}{'same':>7}{'ens/RF':>8}{'ens/flr':>8}{'same/flr':>9}"
        f"{'ens/same':>9}{'wall: RF':>10}{'ens':>7}{'same':>7}{'ens/RF':>8}{'ens/flr':>8}"
        f"{'ens/same':>9}"
    )
    for data_name, (X, y) in datasets(args.data.split(",")).items():

        def rf(X=X, y=y):
            return RandomForestClassifier(n_estimators=M, n_jobs=args.n_jobs, random_state=0).fit(
                X, y
            )

        for weighting in args.weightings.split(","):
            est = RotationEnsembleClassifier(
                n_estimators=M,
                n_rotations=R,
                micro_forest_size=U,
                weighting=weighting,
                n_jobs=args.n_jobs,
                random_state=0,
            )
            est.fit(X, y)  # warm-up, and the tree counts for the same-trees fits
            counts = est.n_trees_per_rotation_
            grown = R * U + int(np.maximum(counts - U, 0).sum())
            floor = grown / M
            grow_same = same_trees(est, X, y, args.n_jobs)
            runs = []  # per repeat: (cpu, wall) of RF, ensemble, same trees
            for _ in range(args.repeat):
                t_rf, _ = timed(rf)
                # a fresh estimator, as RF's fit is: the previous model is released outside
                # the timing for all three (refitting one estimator would also time the
                # release of its last model)
                t_ens, _ = timed(lambda X=X, y=y, est=est: clone(est).fit(X, y))
                t_same = timed(grow_same)[0] if grow_same else (np.nan, np.nan)
                runs.append((t_rf, t_ens, t_same))
            cpu, wall = np.array(runs)[:, :, 0], np.array(runs)[:, :, 1]
            print(
                f"{data_name:<32}{weighting:<6}{grown:>6}{floor:>7.3f}"
                + "".join(f"{v:>{w}.3f}" for v, w in zip(np.median(cpu, axis=0), (9, 7, 7)))
                + f"{np.median(cpu[:, 1] / cpu[:, 0]):>8.3f}"
                + f"{np.median(cpu[:, 1] / cpu[:, 0] / floor):>8.3f}"
                + f"{np.median(cpu[:, 2] / cpu[:, 0] / floor):>9.3f}"
                + f"{np.median(cpu[:, 1] / cpu[:, 2]):>9.3f}"
                + f"{np.median(wall[:, 0]):>10.3f}{np.median(wall[:, 1]):>7.3f}"
                + f"{np.median(wall[:, 2]):>7.3f}"
                + f"{np.median(wall[:, 1] / wall[:, 0]):>8.3f}"
                + f"{np.median(wall[:, 1] / wall[:, 0] / floor):>8.3f}"
                + f"{np.median(wall[:, 1] / wall[:, 2]):>9.3f}",
                flush=True,
            )
            if args.phases:
                phases = phase_times(est, X, y, args.repeat)
                print(
                    "    phases, median ms: "
                    + ", ".join(f"{name} {ms:.2f}" for name, ms in phases.items())
                    + f"; same trees {1e3 * np.median(wall[:, 2]):.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
