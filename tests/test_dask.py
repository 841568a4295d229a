"""obliqueforest.dask on a real distributed.LocalCluster (2 worker processes x 1 thread)."""

import logging
import os
import pickle
import signal
import threading
import time

import numpy as np
import pytest
from sklearn.base import clone

pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")

from distributed import Client, LocalCluster  # noqa: E402

import obliqueforest as of  # noqa: E402
from obliqueforest import dask as odask  # noqa: E402
from obliqueforest.rotation import RotationEnsembleClassifier  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(
            processes=True,
            n_workers=2,
            threads_per_worker=1,
            dashboard_address=":0",
            memory_limit="2GiB",
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


def data(n=1200, p=8, seed=0, n_classes=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    score = X[:, 0] + X[:, 1] - 0.5 * X[:, 2]
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y


def chunked(X, y, rows=300):
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


ESTIMATORS = {
    "rf": lambda: of.RandomForestClassifier(n_estimators=20, random_state=1, oob_score=True),
    "sporf": lambda: of.SPORFClassifier(n_estimators=20, random_state=2, oob_score=True),
    "morf": lambda: of.MORFClassifier(
        n_estimators=30, data_shape=(2, 4), random_state=3, oob_score=True
    ),
    "oblique_weighted": lambda: of.ObliqueForestClassifier(
        n_estimators=9, random_state=4, class_weight="balanced", max_features=0.5
    ),
}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_replicate_fit_is_byte_identical_to_local(client, name):
    X, y = data()
    Xd, yd = chunked(X, y)
    w = np.linspace(0.5, 2.0, len(y))
    local = ESTIMATORS[name]().fit(X, y, sample_weight=w)
    est = odask.fit(
        ESTIMATORS[name](),
        Xd,
        yd,
        sample_weight=da.from_array(w, chunks=300),
        client=client,
        mode="replicate",
    )
    assert est.dask_mode_ == "replicate"
    assert est._forest.to_bytes() == local._forest.to_bytes()
    np.testing.assert_array_equal(est.feature_importances_, local.feature_importances_)
    if local.oob_score:
        np.testing.assert_array_equal(est.oob_decision_function_, local.oob_decision_function_)
        assert est.oob_score_ == local.oob_score_
    np.testing.assert_array_equal(est.predict_proba(X), local.predict_proba(X))


def test_replicate_regressor_from_dataframe_keeps_oob_and_feature_names(client):
    X, _ = data(900, 5, seed=5)
    y = X[:, 0] * 1.7 + np.sin(X[:, 1])  # real targets: OOB sums are order-sensitive
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(5)])
    local = of.SPORFRegressor(n_estimators=20, random_state=0, oob_score=True).fit(frame, y)
    est = odask.fit(
        of.SPORFRegressor(n_estimators=20, random_state=0, oob_score=True),
        dd.from_pandas(frame, npartitions=3),
        dd.from_pandas(pd.Series(y), npartitions=3),
        client=client,
        mode="replicate",
    )
    assert est._forest.to_bytes() == local._forest.to_bytes()
    assert [v.view(np.uint64) for v in est.oob_prediction_] == [
        v.view(np.uint64) for v in local.oob_prediction_
    ]
    assert list(est.feature_names_in_) == list(frame.columns)
    # an ordinary estimator: pickles and saves like a local one
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(frame), local.predict(frame))


def test_replicate_quantile_and_honest_forests_equal_local_fits(client):
    # (the kinds of issue 25: kept leaf values travel with each part, honest rows are
    # drawn from each tree's own stream wherever it grows)
    X, _ = data(900, 5, seed=6)
    y = X[:, 0] * 1.7 + np.sin(X[:, 1])
    Xd, yd = chunked(X, y)

    def make():
        return of.SPORFRegressor(
            n_estimators=12, random_state=0, store_leaf_values=True, honest_fraction=0.4
        )

    local = make().fit(X, y)
    est = odask.fit(make(), Xd, yd, client=client, mode="replicate")
    assert est._forest.to_bytes() == local._forest.to_bytes()
    np.testing.assert_array_equal(est.predict_quantiles(X), local.predict_quantiles(X))
    with pytest.raises(ValueError, match="store_leaf_values.*replicate"):
        odask.fit(make(), Xd, yd, client=client, mode="partitions")
    honest = odask.fit(
        of.RandomForestClassifier(10, honest_fraction=0.5, random_state=0),
        *chunked(*data()),
        client=client,
        mode="replicate",
    )
    local = of.RandomForestClassifier(10, honest_fraction=0.5, random_state=0).fit(*data())
    assert honest._forest.to_bytes() == local._forest.to_bytes()


def test_replicate_rotation_ensemble_equals_local_fit(client):
    X, y = data(600, 4, seed=6, n_classes=2)
    params = dict(
        n_estimators=24, n_rotations=4, micro_forest_size=4, oob_score=True, random_state=7
    )
    local = RotationEnsembleClassifier(**params).fit(X, y)
    est = odask.fit(RotationEnsembleClassifier(**params), *chunked(X, y), client=client)
    assert est.dask_mode_ == "replicate"
    np.testing.assert_array_equal(est.n_trees_per_rotation_, local.n_trees_per_rotation_)
    assert [f and f.to_bytes() for f in est._forests] == [
        f and f.to_bytes() for f in local._forests
    ]
    np.testing.assert_array_equal(est.oob_decision_function_, local.oob_decision_function_)
    np.testing.assert_array_equal(est.predict_proba(X), local.predict_proba(X))


def test_partitions_mode_grows_each_tree_on_its_workers_rows_only(client):
    X, y = data(2000, 6, seed=8)
    y[7] = 3  # a class that only one partition holds
    frame = pd.DataFrame(X, columns=list("abcdef"))
    Xd = dd.from_pandas(frame, npartitions=4)
    yd = dd.from_pandas(pd.Series(y), npartitions=4)
    est = odask.fit(
        of.SPORFClassifier(n_estimators=16, random_state=0),
        Xd,
        yd,
        client=client,
        mode="partitions",
    )
    assert est.dask_mode_ == "partitions"
    np.testing.assert_array_equal(est.classes_, [0, 1, 2, 3])
    assert est._forest.n_outputs == 4, "every tree knows every class"
    rows = est.dask_tree_rows_
    assert rows.shape == (16,)
    partition_rows = Xd.map_partitions(len).compute().to_numpy()
    for t in range(16):
        root = {k: v[0] for k, v in est._forest.tree_nodes(t).items() if len(v)}
        # a tree draws as many rows as its worker holds (the bootstrap stays within
        # them): its in-bag counts cover those rows only, and its root saw exactly them
        in_bag = est._forest.in_bag_counts(t, int(rows[t]))
        assert in_bag.sum() == rows[t] < len(y)
        assert root["n_node_samples"] == np.count_nonzero(in_bag)
        assert root["weighted_n_node_samples"] == rows[t]
    held = sorted(set(rows.tolist()))
    # each worker held whole partitions, and together all rows
    assert all(any(r == partition_rows[list(s)].sum() for s in _subsets(4)) for r in held)
    assert len(held) == 1 or sum(held) == len(y)
    assert (est.predict(frame) == y).mean() > 0.9
    assert list(est.feature_names_in_) == list("abcdef")


def _subsets(n):
    from itertools import combinations

    return [c for k in range(1, n + 1) for c in combinations(range(n), k)]


WITHOUT_TARGETS = {
    "isolation-sporf": lambda: of.IsolationForest(
        30, projection=of.projections.SparseSigned(), max_features=0.5, random_state=5
    ),
    "unsupervised-gaussian": lambda: of.UnsupervisedRandomForest(
        10, projection=of.projections.Gaussian(), criterion="fastbic", random_state=6
    ),
}


@pytest.mark.parametrize("name", sorted(WITHOUT_TARGETS))
def test_replicate_fit_of_forests_without_targets_is_byte_identical(client, name):
    X, _ = data(900, 6, seed=11)
    Xd = da.from_array(X, chunks=(300, 6))
    local = WITHOUT_TARGETS[name]().fit(X)
    est = odask.fit(WITHOUT_TARGETS[name](), Xd, client=client, mode="replicate")
    assert est._forest.to_bytes() == local._forest.to_bytes()
    np.testing.assert_array_equal(odask.apply(est, Xd).compute(), local.apply(X))
    if isinstance(local, of.IsolationForest):
        assert (est.offset_, est.max_samples_) == (local.offset_, local.max_samples_)
        for method in ("score_samples", "decision_function", "predict"):
            out = getattr(odask, method)(est, Xd).compute()
            np.testing.assert_array_equal(out, getattr(local, method)(X))


def test_partitions_mode_grows_isolation_trees_on_each_group(client):
    X, _ = data(2000, 4, seed=12)
    Xd = dd.from_pandas(pd.DataFrame(X, columns=list("abcd")), npartitions=4)
    est = odask.fit(of.IsolationForest(20, random_state=0), Xd, client=client, mode="partitions")
    assert est.dask_mode_ == "partitions" and est.max_samples_ == 256
    assert all(est._forest.tree_nodes(t)["n_node_samples"][0] == 256 for t in range(20))
    far = np.array([[8.0, 8.0, 8.0, 8.0]])
    assert est.predict(pd.DataFrame(far, columns=list("abcd")))[0] == -1
    with pytest.raises(ValueError, match="contamination"):
        odask.fit(of.IsolationForest(4, contamination=0.1), Xd, client=client, mode="partitions")


def test_auto_mode_replicates_small_data_and_says_so(client, caplog):
    X, y = data(400, 4)
    with caplog.at_level(logging.INFO, logger="obliqueforest.dask"):
        est = odask.fit(of.RandomForestClassifier(n_estimators=4), *chunked(X, y), client=client)
    assert est.dask_mode_ == "replicate"
    assert "mode='replicate'" in caplog.text


def test_progress_bar_counts_trees_across_the_cluster(client, capsys):
    X, y = data(400, 4)
    odask.fit(
        of.RandomForestClassifier(n_estimators=10, verbose=1),
        *chunked(X, y),
        client=client,
        mode="replicate",
    )
    assert "10/10" in capsys.readouterr().err


def test_dask_predictions_equal_local_predictions(client):
    X, y = data(900, 6, seed=9)
    est = of.SPORFClassifier(n_estimators=8, random_state=0).fit(X, y)
    Xd = da.from_array(X, chunks=(250, 3))  # column chunks are joined
    np.testing.assert_array_equal(odask.predict(est, Xd).compute(), est.predict(X))
    np.testing.assert_array_equal(odask.predict_proba(est, Xd).compute(), est.predict_proba(X))
    np.testing.assert_array_equal(odask.apply(est, Xd).compute(), est.apply(X))
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(6)])
    named = of.SPORFClassifier(n_estimators=8, random_state=0).fit(frame, y)
    out = odask.predict_proba(named, dd.from_pandas(frame, npartitions=3)).compute()
    assert list(out.columns) == list(named.classes_)
    np.testing.assert_array_equal(out.to_numpy(), named.predict_proba(frame))
    pred = odask.predict(named, dd.from_pandas(frame, npartitions=3)).compute()
    np.testing.assert_array_equal(pred.to_numpy(), named.predict(frame))


def test_dask_transform_equals_autoencoder_encoding(client):
    from obliqueforest import ForestAutoencoder

    X, _ = data(300, 4, seed=10)
    ae = ForestAutoencoder(n_estimators=10, n_components=3, random_state=0).fit(X)
    Z = odask.transform(ae, da.from_array(X, chunks=(100, 4))).compute()
    np.testing.assert_allclose(Z, ae.transform(X), rtol=0, atol=0)


def test_mismatched_partitions_are_a_clear_error(client):
    X, y = data(600, 4)
    with pytest.raises(ValueError, match="partitions"):
        odask.fit(
            of.RandomForestClassifier(n_estimators=2),
            dd.from_pandas(pd.DataFrame(X), npartitions=4),
            dd.from_pandas(pd.Series(y), npartitions=3),
            client=client,
        )


def test_unaligned_y_chunks_are_a_clear_error(client):
    X, y = data(600, 4)
    for mode in ("replicate", "partitions"):
        with pytest.raises(ValueError, match="not aligned"):
            odask.fit(
                of.RandomForestClassifier(n_estimators=2),
                da.from_array(X, chunks=(200, 4)),
                da.from_array(y, chunks=((100, 300, 200),)),
                client=client,
                mode=mode,
            )


def test_infinity_in_a_partition_is_a_clear_error(client):
    X, y = data(600, 4)
    X[450, 2] = np.inf  # (NaN is a missing value, fitted like any other)
    for mode in ("replicate", "partitions"):
        with pytest.raises(ValueError, match="infinity"):
            odask.fit(of.SPORFClassifier(n_estimators=2), *chunked(X, y), client=client, mode=mode)


def test_partitions_with_different_features_are_a_clear_error(client):
    import dask

    X, y = data(400, 3)
    good = pd.DataFrame(X[:200], columns=list("abc"))
    bad = pd.DataFrame(X[200:], columns=list("abd"))
    # a source that does not check its partitions against the metadata
    Xd = dd.from_delayed(
        [dask.delayed(good), dask.delayed(bad)], meta=good.iloc[:0], verify_meta=False
    )
    yd = dd.from_pandas(pd.Series(y), npartitions=2)
    with pytest.raises(ValueError, match="identical across partitions"):
        odask.fit(
            of.RandomForestClassifier(n_estimators=2), Xd, yd, client=client, mode="partitions"
        )


def test_worker_lost_mid_fit_gets_its_trees_regrown_identically(client):
    X, y = data(6000, 16, seed=11)
    est = of.SPORFClassifier(n_estimators=24, random_state=5)
    local = clone(est).fit(X, y)
    pids = client.run(os.getpid)
    result = {}

    def run():
        result["est"] = odask.fit(est, *chunked(X, y, 2000), client=client, mode="replicate")

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        busy = [
            w for w, keys in client.processing().items() if any("_grow_part" in k for k in keys)
        ]
        if len(busy) == 2:
            break
        time.sleep(0.02)
    else:
        pytest.fail("the fit never ran on both workers")
    time.sleep(0.2)  # mid-fit
    os.kill(pids[busy[0]], signal.SIGKILL)
    thread.join(120)
    assert not thread.is_alive()
    assert result["est"]._forest.to_bytes() == local._forest.to_bytes()
    # leave the cluster as found: the killed worker gone from the scheduler and its
    # replacement registered (waiting for two workers alone can count the dead one)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        workers = client.nthreads()
        if len(workers) == 2 and busy[0] not in workers:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the killed worker was not replaced")


def test_core_parameters_and_parts_pickle_for_the_workers():
    X, y = data(200, 4)
    est = of.SPORFClassifier(n_estimators=4, random_state=0, oob_score=True)
    est.set_params(n_estimators=40).fit(X, y)  # (enough trees for every row's OOB)
    params = est.set_params(n_estimators=4)._core_params(4, est._task_params(y))
    again = pickle.loads(pickle.dumps(params))
    assert repr(again) == repr(params)
    Xc = np.asarray(X, dtype=np.float32)
    yc = np.searchsorted(est.classes_, y).astype(np.float64)
    parts = [of._core.ForestPart.grow(Xc, yc, None, again, a, b) for a, b in ((2, 4), (0, 2))]
    parts = [pickle.loads(pickle.dumps(p)) for p in parts]
    whole = of._core.Forest.fit(Xc, yc, None, params)
    assert of._core.ForestPart.join(parts).to_bytes() == whole.to_bytes()
    with pytest.raises(ValueError, match="gap or overlap"):
        of._core.ForestPart.join(parts[:1])


def test_pruning_and_monotonic_constraints_reach_the_workers(client):
    # fields the model file leaves out (ccp_alpha, monotonic_cst) still travel with the
    # parameters a worker receives
    X, _ = data(600, 4, seed=7)
    y = X[:, 0] - 0.5 * X[:, 1] + np.sin(3 * X[:, 2])

    def make():
        return of.SPORFRegressor(
            n_estimators=6, random_state=3, ccp_alpha=0.01, monotonic_cst=[1, -1, 0, 0]
        )

    params = make().set_params()
    params._seed = 0
    core = params._core_params(4, params._task_params(y))
    assert repr(pickle.loads(pickle.dumps(core))) == repr(core)
    local = make().fit(X, y)
    Xd, yd = chunked(X, y)
    est = odask.fit(make(), Xd, yd, client=client, mode="replicate")
    assert est._forest.to_bytes() == local._forest.to_bytes()


def test_multi_output_predict_proba_matches_local(client):
    X, y = data(600, 5, seed=12)
    Y = np.stack([y, (X[:, 3] > 0).astype(int)], axis=1)  # 3 classes and 2 classes
    est = of.SPORFClassifier(n_estimators=6, random_state=0).fit(X, Y)
    local = est.predict_proba(X)
    out = odask.predict_proba(est, da.from_array(X, chunks=(200, 5)))
    assert isinstance(out, list) and len(out) == 2
    for dist, loc in zip(dask_compute(*out), local):
        np.testing.assert_array_equal(dist, loc)
    frame = pd.DataFrame(X, columns=list("abcde"))
    named = of.SPORFClassifier(n_estimators=6, random_state=0).fit(frame, Y)
    frames = dask_compute(*odask.predict_proba(named, dd.from_pandas(frame, npartitions=3)))
    for k, (got, loc) in enumerate(zip(frames, named.predict_proba(frame))):
        assert list(got.columns) == list(named.classes_[k])
        np.testing.assert_array_equal(got.to_numpy(), loc)
    np.testing.assert_array_equal(
        odask.predict(est, da.from_array(X, chunks=(200, 5))).compute(), est.predict(X)
    )


def dask_compute(*collections):
    import dask

    return dask.compute(*collections)


def _placed(client, blocks, workers):
    """A dask array of row blocks, block i held by workers[i] (scattered there)."""
    parts = [client.scatter(b, workers=[w], hash=False) for b, w in zip(blocks, workers)]
    shapes = [b.shape for b in blocks]
    arrays = [da.from_delayed(p, shape=s, dtype=blocks[0].dtype) for p, s in zip(parts, shapes)]
    return da.concatenate(arrays)


def test_partitions_mode_depends_on_the_partitioning_not_the_placement(client):
    X, y = data(2400, 6, seed=13)
    bounds = [0, 500, 1200, 1700, 2400]  # four partitions of different sizes
    xs = [X[a:b] for a, b in zip(bounds, bounds[1:])]
    ys = [y[a:b] for a, b in zip(bounds, bounds[1:])]
    # (a worker killed by an earlier test may still be restarting)
    client.wait_for_workers(2, timeout=60)
    a, b = sorted(client.nthreads())
    models = []
    for holders in ([a, b, a, b], [b, a, b, a], [a, a, b, b]):
        Xd, yd = _placed(client, xs, holders), _placed(client, ys, holders)
        est = of.SPORFClassifier(n_estimators=12, random_state=4)
        models.append(odask.fit(est, Xd, yd, client=client, mode="partitions"))
    first = models[0]._forest.to_bytes()
    assert all(m._forest.to_bytes() == first for m in models[1:])
    # two groups of consecutive partitions (two workers): rows 0-1199 and 1200-2399
    assert sorted(set(models[0].dask_tree_rows_.tolist())) == [1200]
    est = of.SPORFClassifier(n_estimators=12, random_state=5)
    assert odask.fit(est, Xd, yd, client=client, mode="partitions")._forest.to_bytes() != first


def test_the_workers_are_asked_of_the_scheduler_not_the_clients_cache(client, monkeypatch):
    # The client's cached scheduler_info() can list no workers (its periodic refresh
    # fetches none and may land between a fetch and the read): a fit must not read it.
    # CI once failed test_partitions_mode_depends_on_the_partitioning_not_the_placement
    # with an IndexError that way.
    X, y = data(1200, 6, seed=2)
    expected = odask.fit(
        of.SPORFClassifier(n_estimators=6, random_state=1),
        *chunked(X, y, 600),
        client=client,
        mode="partitions",
    )
    monkeypatch.setattr(client, "scheduler_info", lambda *a, **k: {"workers": {}})
    for mode in ("partitions", "replicate", "auto"):
        est = odask.fit(
            of.SPORFClassifier(n_estimators=6, random_state=1),
            *chunked(X, y, 600),
            client=client,
            mode=mode,
        )
        if mode == "partitions":
            assert est._forest.to_bytes() == expected._forest.to_bytes()
            assert sorted(set(est.dask_tree_rows_.tolist())) == [600]


def test_groups_are_consecutive_partitions_balanced_by_rows():
    from obliqueforest.dask import _groups

    assert _groups(np.array([500, 700, 500, 700]), 2) == [[0, 1], [2, 3]]
    assert _groups(np.array([10, 10, 10, 1000]), 2) == [[0, 1, 2], [3]]
    assert _groups(np.array([1000, 1, 1, 1]), 3) == [[0], [1], [2, 3]]
    assert _groups(np.array([5, 5, 5]), 3) == [[0], [1], [2]]
    assert _groups(np.array([5]), 1) == [[0]]


def test_no_data_or_model_is_embedded_in_a_graph(client):
    import warnings

    import dask

    X, y = data(3000, 20, seed=14)  # 480 kB of float64
    with dask.config.set({"distributed.admin.large-graph-warning-threshold": "100kB"}):
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message="Sending large graph")
            for mode in ("partitions", "replicate"):
                est = odask.fit(
                    of.RandomForestClassifier(n_estimators=8, random_state=0),
                    X,
                    y,
                    client=client,
                    mode=mode,
                )
            assert len(est._forest.to_bytes()) > 200_000  # a model above the threshold
            np.testing.assert_array_equal(odask.predict(est, X).compute(), est.predict(X))
            client.wait_for_workers(2, timeout=60)
            Xd = _placed(client, [X[:1500], X[1500:]], sorted(client.nthreads()))
            proba = odask.predict_proba(est, Xd).compute()
            np.testing.assert_array_equal(proba, est.predict_proba(X))


def test_a_cancelled_progress_stops_a_part_growing():
    # the switch obliqueforest.dask trips on a worker when the client lets go of the task
    X, y = data(200, 4)
    est = of.RandomForestClassifier(n_estimators=2, random_state=0).fit(X, y)
    params = est._core_params(4, est._task_params(y))
    progress = of._core.Progress()
    progress.cancel()
    with pytest.raises(of.ForestError, match="cancel"):
        of._core.ForestPart.grow(
            np.asarray(X, np.float32), y.astype(np.float64), None, params, 0, 2, 1, progress
        )


@pytest.mark.parametrize("mode", ["replicate", "partitions"])
def test_ctrl_c_during_a_fit_stops_the_workers_trees(client, mode):
    X, y = data(20000, 20, seed=15)
    Xd, yd = chunked(X, y, rows=10000)
    main = threading.main_thread().ident

    def interrupt_once_both_workers_grow():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            busy = [
                w
                for w, keys in client.processing().items()
                if any(name in str(k) for k in keys for name in ("_grow_part", "_fit_worker"))
            ]
            if len(busy) == 2:
                time.sleep(1.0)  # well into the trees
                signal.pthread_kill(main, signal.SIGINT)
                return
            time.sleep(0.05)

    helper = threading.Thread(target=interrupt_once_both_workers_grow)
    helper.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        # minutes of trees on the two workers
        odask.fit(
            of.SPORFClassifier(n_estimators=600, random_state=0),
            Xd,
            yd,
            client=client,
            mode=mode,
        )
    helper.join()
    assert time.monotonic() - t0 < 60
    # Dask cannot stop a running task: without the watcher the worker threads would grow
    # their trees for minutes. They stop within a second or so (a quarter-second watch,
    # then one tree node); CPU time cannot tell, on a machine shared with other work
    deadline = time.monotonic() + 15
    while True:
        running = client.run(lambda dask_worker: len(dask_worker.active_threads))
        if not any(running.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not any(running.values()), running
    # and the cluster takes the next fit as usual
    est = odask.fit(
        of.RandomForestClassifier(n_estimators=4, random_state=0), Xd, yd, client=client, mode=mode
    )
    assert est.score(X, y) > 0.8


# -- categorical columns (issue 46) --------------------------------------------------------


def _table(n=800, seed=0):
    """Numbers, a text column (object), a category and a bool column; y depends on a
    non-ordinal set of the text column's levels and on x."""
    rng = np.random.default_rng(seed)
    city = rng.choice(list("abcdef"), size=n)
    frame = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "city": city.astype(object),
            "size": pd.Categorical(rng.choice(["S", "M", "L"], size=n), categories=["S", "M", "L"]),
            "flag": rng.random(n) < 0.5,
        }
    )
    frame.loc[rng.random(n) < 0.05, "city"] = None
    y = (np.isin(city, ["b", "e", "f"]) ^ (frame["x"].to_numpy() > 1)).astype(np.int64)
    return frame, y


def _assert_same_categories(est, local):
    np.testing.assert_array_equal(est.is_categorical_, local.is_categorical_)
    for ours, theirs in zip(est.categories_, local.categories_):
        assert (ours is None and theirs is None) or (
            ours.dtype == theirs.dtype and list(ours) == list(theirs)
        )
    assert list(est._forest.categorical) == list(local._forest.categorical)


def _split_levels(forest, n_trees, feature):
    """The level codes of ``feature`` that the level maps of the forest's nodes hold."""
    seen = set()
    for t in range(n_trees):
        nodes = forest.tree_nodes(t)
        for node in range(len(nodes["left"])):
            for m in range(nodes["map_node_ptr"][node], nodes["map_node_ptr"][node + 1]):
                if (
                    nodes["proj_features"][nodes["proj_ptr"][node] + nodes["map_term"][m]]
                    == feature
                ):
                    seen.update(nodes["map_levels"][nodes["map_ptr"][m] : nodes["map_ptr"][m + 1]])
    return {int(v) for v in seen}


def test_replicate_fit_of_a_table_with_text_columns_is_byte_identical_to_local(client):
    frame, y = _table()
    local = of.SPORFClassifier(n_estimators=12, random_state=0).fit(frame, y)
    for X, yy in ((frame, y), (dd.from_pandas(frame, npartitions=3), da.from_array(y, 300))):
        if isinstance(X, dd.DataFrame):
            yy = dd.from_pandas(pd.Series(y), npartitions=3)
        est = odask.fit(
            of.SPORFClassifier(n_estimators=12, random_state=0),
            X,
            yy,
            client=client,
            mode="replicate",
        )
        assert est._forest.to_bytes() == local._forest.to_bytes()
        _assert_same_categories(est, local)


def test_dask_predict_on_text_columns_matches_local_predict(client):
    frame, y = _table()
    est = of.RandomForestClassifier(n_estimators=10, random_state=0).fit(frame, y)
    new, _ = _table(300, seed=1)
    new.loc[::7, "city"] = "zz"  # a level never seen in training: the missing side
    new["size"] = pd.Categorical(new["size"].astype(str), categories=["L", "M", "S", "XL"])
    Xd = dd.from_pandas(new, npartitions=3)
    np.testing.assert_array_equal(odask.predict(est, Xd).compute().to_numpy(), est.predict(new))
    out = odask.predict_proba(est, Xd).compute()
    np.testing.assert_array_equal(out.to_numpy(), est.predict_proba(new))


def test_partitions_mode_fixes_the_levels_from_every_partition(client):
    frame, y = _table(1200, seed=2)
    # sorted by city: each partition holds a few of its levels, the last its missing values
    order = np.argsort(frame["city"].fillna("~").to_numpy(), kind="stable")
    frame, y = frame.iloc[order].reset_index(drop=True), y[order]
    Xd = dd.from_pandas(frame, npartitions=4)
    yd = dd.from_pandas(pd.Series(y), npartitions=4)
    assert Xd.partitions[0]["city"].compute().nunique() < 6
    est = odask.fit(
        of.RandomForestClassifier(n_estimators=16, random_state=0),
        Xd,
        yd,
        client=client,
        mode="partitions",
    )
    local = of.RandomForestClassifier(n_estimators=16, random_state=0).fit(frame, y)
    _assert_same_categories(est, local)  # every tree knows every level
    assert sorted(set(est.dask_tree_rows_)) != [len(y)]  # grown on groups of partitions
    # the groups code city through the same levels: the trees of the first group split
    # on a, b, c (codes 0-2), those of the second on d, e, f (3-5), not on codes of their own
    assert _split_levels(est._forest, 16, feature=1) == set(range(6))
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict_proba(frame), est.predict_proba(frame))


def test_partitions_mode_fixes_the_levels_of_integer_coded_array_columns(client):
    frame, y = _table(1200, seed=3)
    codes = frame["city"].map(dict(zip("abcdef", range(6)))).to_numpy(dtype=np.float64)
    X = np.column_stack([frame["x"].to_numpy(), np.sort(codes)])
    y = y[np.argsort(codes, kind="stable")]
    make = lambda: of.RandomForestClassifier(  # noqa: E731
        n_estimators=8, categorical_features=[1], random_state=0
    )
    est = odask.fit(make(), *chunked(X, y, rows=300), client=client, mode="partitions")
    _assert_same_categories(est, make().fit(X, y))


def test_dask_transform_of_a_mixed_table_equals_the_autoencoders(client):
    from obliqueforest import ForestAutoencoder

    frame, _ = _table(300)
    ae = ForestAutoencoder(n_estimators=20, n_components=2, random_state=0).fit(frame)
    new = frame.iloc[:90].copy()
    new.loc[::5, "city"] = "zz"
    Z = odask.transform(ae, dd.from_pandas(new, npartitions=3)).compute()
    np.testing.assert_array_equal(np.asarray(Z), ae.transform(new))
