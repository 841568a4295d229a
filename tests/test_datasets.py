"""Tests for obliqueforest.datasets: the simulations of the SPORF, MORF and waveform papers."""

import numpy as np
import pytest
from obliqueforest import datasets

ALL_GENERATORS = [getattr(datasets, name) for name in datasets.__all__]

# expected number of features and classes with the default arguments
DEFAULT_SHAPES = {
    "make_sparse_parity": (20, 2),
    "make_orthant": (6, 64),
    "make_trunk": (10, 2),
    "make_consistency": (2, 2),
    "make_circle_segments": (100, 2),
    "make_hv_bars": (784, 2),
    "make_impulse": (100, 2),
    "make_waveform": (21, 3),
}


def _cyclic_runs(row):
    """Lengths of the runs of ones of a binary vector read as a circle."""
    row = np.asarray(row, dtype=bool)
    if row.all():
        return [row.size]
    # rotate so that the vector starts with a zero: no run wraps around
    start = int(np.flatnonzero(~row)[0])
    rolled = np.roll(row, -start).astype(np.int8)
    edges = np.diff(np.concatenate([[0], rolled, [0]]))
    return list(np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1))


def _waveform_bases():
    i = np.arange(1, 22)
    h1 = np.maximum(6 - np.abs(i - 11), 0).astype(float)
    h2 = np.maximum(6 - np.abs(i - 15), 0).astype(float)
    h3 = np.maximum(6 - np.abs(i - 7), 0).astype(float)
    return h1, h2, h3


# ---------------------------------------------------------------------------
# behaviour shared by every generator
# ---------------------------------------------------------------------------


def test_module_all_lists_the_eight_generators():
    assert sorted(datasets.__all__) == sorted(DEFAULT_SHAPES)


@pytest.mark.parametrize("make", ALL_GENERATORS, ids=lambda f: f.__name__)
def test_generators_shapes_and_dtypes(make):
    n_features, n_classes = DEFAULT_SHAPES[make.__name__]
    X, y = make(n_samples=301, random_state=0)
    assert X.shape == (301, n_features)
    assert y.shape == (301,)
    assert X.dtype == np.float64
    assert y.dtype == np.int64
    assert np.isfinite(X).all()
    assert y.min() >= 0
    assert y.max() < n_classes


@pytest.mark.parametrize("make", ALL_GENERATORS, ids=lambda f: f.__name__)
def test_generators_reproducible_with_random_state(make):
    X1, y1 = make(n_samples=50, random_state=7)
    X2, y2 = make(n_samples=50, random_state=7)
    X3, y3 = make(n_samples=50, random_state=np.random.RandomState(7))
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    # an int seed is the same as a RandomState seeded with it
    np.testing.assert_array_equal(X1, X3)
    np.testing.assert_array_equal(y1, y3)
    X4, _ = make(n_samples=50, random_state=8)
    assert not np.array_equal(X1, X4)


@pytest.mark.parametrize("make", ALL_GENERATORS, ids=lambda f: f.__name__)
def test_generators_accept_generator_and_none(make):
    X1, y1 = make(n_samples=40, random_state=np.random.default_rng(3))
    X2, y2 = make(n_samples=40, random_state=np.random.default_rng(3))
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    X, y = make(n_samples=40, random_state=None)
    assert X.shape[0] == y.shape[0] == 40


@pytest.mark.parametrize("make", ALL_GENERATORS, ids=lambda f: f.__name__)
def test_generators_none_uses_global_numpy_state(make):
    saved = np.random.get_state()
    try:
        np.random.seed(11)
        X1, y1 = make(n_samples=30)
        np.random.seed(11)
        X2, y2 = make(n_samples=30)
    finally:
        np.random.set_state(saved)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)


@pytest.mark.parametrize("make", ALL_GENERATORS, ids=lambda f: f.__name__)
def test_generators_single_sample(make):
    X, y = make(n_samples=1, random_state=0)
    assert X.shape[0] == 1
    assert y.shape == (1,)


@pytest.mark.parametrize("make", ALL_GENERATORS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("bad", [0, -5, 2.5, "10", None, True])
def test_generators_bad_n_samples_raises(make, bad):
    with pytest.raises(ValueError, match="n_samples"):
        make(n_samples=bad, random_state=0)


@pytest.mark.parametrize("make", ALL_GENERATORS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("bad", ["seed", 1.5, -1])
def test_generators_bad_random_state_raises(make, bad):
    with pytest.raises(ValueError, match="random_state"):
        make(n_samples=10, random_state=bad)


@pytest.mark.parametrize(
    "make, kwargs, name",
    [
        (datasets.make_sparse_parity, {"n_features": 0}, "n_features"),
        (datasets.make_sparse_parity, {"n_informative": 0}, "n_informative"),
        (datasets.make_sparse_parity, {"n_features": 5, "n_informative": 6}, "n_informative"),
        (datasets.make_sparse_parity, {"n_informative": 2.0}, "n_informative"),
        (datasets.make_orthant, {"n_features": 0}, "n_features"),
        (datasets.make_orthant, {"n_features": 63}, "n_features"),
        (datasets.make_trunk, {"n_features": 0}, "n_features"),
        (datasets.make_consistency, {"n_stripes": 1}, "n_stripes"),
        (datasets.make_consistency, {"n_stripes": 40.0}, "n_stripes"),
        (datasets.make_circle_segments, {"n_features": 11}, "n_features"),
        (datasets.make_hv_bars, {"image_size": 1}, "image_size"),
        (datasets.make_hv_bars, {"mean_bars": 0}, "mean_bars"),
        (datasets.make_hv_bars, {"mean_bars": -1.0}, "mean_bars"),
        (datasets.make_hv_bars, {"mean_bars": float("nan")}, "mean_bars"),
        (datasets.make_impulse, {"n_features": 0}, "n_features"),
        (datasets.make_impulse, {"onset": -1}, "onset"),
        (datasets.make_impulse, {"onset": 100}, "onset"),
        (datasets.make_impulse, {"n_features": 10, "onset": 10}, "onset"),
        (datasets.make_impulse, {"decay_length": 0.0}, "decay_length"),
        (datasets.make_impulse, {"decay_length": float("inf")}, "decay_length"),
        (datasets.make_waveform, {"noise": -0.1}, "noise"),
        (datasets.make_waveform, {"noise": "1"}, "noise"),
    ],
)
def test_generators_bad_arguments_raise(make, kwargs, name):
    with pytest.raises(ValueError, match=name):
        make(n_samples=10, random_state=0, **kwargs)


@pytest.mark.parametrize(
    "make",
    [
        datasets.make_trunk,
        datasets.make_circle_segments,
        datasets.make_hv_bars,
        datasets.make_impulse,
    ],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("n_samples", [100, 101])
def test_two_class_generators_balanced_and_shuffled(make, n_samples):
    _, y = make(n_samples=n_samples, random_state=0)
    counts = np.bincount(y, minlength=2)
    assert counts.sum() == n_samples
    assert abs(counts[0] - counts[1]) <= 1
    # shuffled, not sorted by class
    assert 0 < np.count_nonzero(np.diff(y))
    assert not np.array_equal(y, np.sort(y))


# ---------------------------------------------------------------------------
# sparse parity
# ---------------------------------------------------------------------------


def test_sparse_parity_labels_are_parity_of_positive_informative_features():
    X, y = datasets.make_sparse_parity(n_samples=2000, random_state=0)
    q = (X[:, :3] > 0).sum(axis=1)
    np.testing.assert_array_equal(y, q % 2)


@pytest.mark.parametrize("n_features, n_informative", [(10, 1), (10, 5), (4, 4)])
def test_sparse_parity_n_informative_controls_label(n_features, n_informative):
    X, y = datasets.make_sparse_parity(
        n_samples=500, n_features=n_features, n_informative=n_informative, random_state=1
    )
    assert X.shape == (500, n_features)
    np.testing.assert_array_equal(y, (X[:, :n_informative] > 0).sum(axis=1) % 2)


def test_sparse_parity_features_uniform_on_minus_one_one():
    X, y = datasets.make_sparse_parity(n_samples=20000, random_state=2)
    assert X.min() >= -1.0
    assert X.max() <= 1.0
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=0.03)
    np.testing.assert_allclose(X.var(axis=0), 1.0 / 3.0, atol=0.02)
    assert abs(y.mean() - 0.5) < 0.03


def test_sparse_parity_single_informative_feature_carries_no_marginal_signal():
    # no proper subset of the informative features says anything about y
    X, y = datasets.make_sparse_parity(n_samples=40000, random_state=3)
    for j in range(3):
        positive = X[:, j] > 0
        assert abs(y[positive].mean() - y[~positive].mean()) < 0.03


# ---------------------------------------------------------------------------
# orthant
# ---------------------------------------------------------------------------


def test_orthant_labels_encode_signs_as_binary_number():
    X, y = datasets.make_orthant(n_samples=3000, random_state=0)
    expected = sum((X[:, j] > 0).astype(np.int64) << j for j in range(6))
    np.testing.assert_array_equal(y, expected)


def test_orthant_has_two_to_the_p_equally_likely_classes():
    X, y = datasets.make_orthant(n_samples=16000, n_features=3, random_state=1)
    counts = np.bincount(y, minlength=8)
    assert counts.size == 8
    np.testing.assert_allclose(counts / counts.sum(), 1 / 8, atol=0.015)
    assert X.min() >= -1.0
    assert X.max() <= 1.0


def test_orthant_same_label_iff_same_signs():
    X, y = datasets.make_orthant(n_samples=500, n_features=4, random_state=2)
    signs = X > 0
    same_label = y[:, None] == y[None, :]
    same_signs = (signs[:, None, :] == signs[None, :, :]).all(axis=2)
    np.testing.assert_array_equal(same_label, same_signs)


# ---------------------------------------------------------------------------
# trunk
# ---------------------------------------------------------------------------


def test_trunk_class_means_are_plus_minus_inverse_sqrt():
    X, y = datasets.make_trunk(n_samples=40000, random_state=0)
    mu = 1.0 / np.sqrt(np.arange(1, 11))
    np.testing.assert_allclose(X[y == 1].mean(axis=0), mu, atol=0.04)
    np.testing.assert_allclose(X[y == 0].mean(axis=0), -mu, atol=0.04)


def test_trunk_within_class_covariance_is_identity():
    X, y = datasets.make_trunk(n_samples=40000, n_features=5, random_state=1)
    for label in (0, 1):
        cov = np.cov(X[y == label], rowvar=False)
        np.testing.assert_allclose(cov, np.eye(5), atol=0.05)


def test_trunk_n_features_sets_dimension():
    X, y = datasets.make_trunk(n_samples=30, n_features=3, random_state=0)
    assert X.shape == (30, 3)
    assert np.bincount(y).tolist() == [15, 15]


# ---------------------------------------------------------------------------
# consistency (Biau et al. 2008)
# ---------------------------------------------------------------------------


def _consistency_labels(X, n_stripes):
    square = np.floor(X[:, 0]).astype(int)
    u = X - square[:, None]
    vertical = np.floor(n_stripes * u[:, 0]).astype(int) % 2
    checker = (np.floor(2 * u[:, 0]) + np.floor(2 * u[:, 1])).astype(int) % 2
    horizontal = np.floor(n_stripes * u[:, 1]).astype(int) % 2
    return np.choose(square, [vertical, checker, horizontal])


def test_consistency_points_lie_in_three_diagonal_unit_squares():
    X, _ = datasets.make_consistency(n_samples=30000, random_state=0)
    square = np.floor(X[:, 0])
    np.testing.assert_array_equal(square, np.floor(X[:, 1]))
    assert set(np.unique(square)) == {0.0, 1.0, 2.0}
    fractions = np.bincount(square.astype(int)) / X.shape[0]
    np.testing.assert_allclose(fractions, 1 / 3, atol=0.015)
    assert X.min() >= 0.0
    assert X.max() < 3.0


@pytest.mark.parametrize("n_stripes", [2, 5, 40, 1000])
def test_consistency_labels_are_stripes_and_checkerboard(n_stripes):
    X, y = datasets.make_consistency(n_samples=5000, n_stripes=n_stripes, random_state=1)
    np.testing.assert_array_equal(y, _consistency_labels(X, n_stripes))


def test_consistency_lower_left_stripes_are_vertical_upper_right_horizontal():
    X, y = datasets.make_consistency(n_samples=20000, n_stripes=10, random_state=2)
    low = X[:, 0] < 1
    high = X[:, 0] >= 2
    # in the lower-left square the label depends on x1 only, alternating by stripe
    stripe = np.floor(10 * X[low, 0]).astype(int)
    for k in range(10):
        assert set(np.unique(y[low][stripe == k])) == {k % 2}
    # in the upper-right square on x2 only
    stripe = np.floor(10 * (X[high, 1] - 2)).astype(int)
    for k in range(10):
        assert set(np.unique(y[high][stripe == k])) == {k % 2}


def test_consistency_centre_is_two_by_two_checkerboard_without_axis_signal():
    X, y = datasets.make_consistency(n_samples=60000, random_state=3)
    centre = (X[:, 0] >= 1) & (X[:, 0] < 2)
    Xc, yc = X[centre] - 1.0, y[centre]
    quadrant_labels = {
        (0, 0): 0,
        (1, 0): 1,
        (0, 1): 1,
        (1, 1): 0,
    }
    for (i, j), label in quadrant_labels.items():
        in_quadrant = (np.floor(2 * Xc[:, 0]) == i) & (np.floor(2 * Xc[:, 1]) == j)
        assert np.all(yc[in_quadrant] == label)
    # an axis-aligned cut through the middle leaves both halves half 0, half 1
    for axis in (0, 1):
        left = Xc[:, axis] < 0.5
        assert abs(yc[left].mean() - 0.5) < 0.02
        assert abs(yc[~left].mean() - 0.5) < 0.02


# ---------------------------------------------------------------------------
# circle segments (MORF experiment A)
# ---------------------------------------------------------------------------


def test_circle_segments_two_cyclic_runs_with_class_lengths():
    X, y = datasets.make_circle_segments(n_samples=1000, random_state=0)
    assert set(np.unique(X)) <= {0.0, 1.0}
    np.testing.assert_array_equal(X.sum(axis=1), 10.0)
    for row, label in zip(X, y):
        runs = sorted(_cyclic_runs(row))
        assert runs == ([5, 5] if label == 0 else [4, 6])


def test_circle_segments_wrap_around_and_cover_every_position():
    X, _ = datasets.make_circle_segments(n_samples=2000, random_state=1)
    # a run crosses the boundary between the last and the first feature
    assert np.any((X[:, 0] == 1) & (X[:, -1] == 1))
    # every position is used, with frequency close to 10 / 100
    np.testing.assert_allclose(X.mean(axis=0), 0.1, atol=0.035)


def test_circle_segments_smallest_circle_has_single_zero_gaps():
    X, y = datasets.make_circle_segments(n_samples=200, n_features=12, random_state=2)
    np.testing.assert_array_equal(X.sum(axis=1), 10.0)
    for row, label in zip(X, y):
        assert sorted(_cyclic_runs(row)) == ([5, 5] if label == 0 else [4, 6])


def test_circle_segments_gap_sizes_take_all_values():
    X, _ = datasets.make_circle_segments(n_samples=3000, n_features=20, random_state=3)
    gaps = set()
    for row in X:
        gaps.update(_cyclic_runs(1 - row))
    # two gaps of zeros summing to 10, each at least 1
    assert gaps == set(range(1, 10))


# ---------------------------------------------------------------------------
# horizontal / vertical bars (MORF experiment B)
# ---------------------------------------------------------------------------


def test_hv_bars_images_have_only_full_horizontal_or_vertical_lines():
    X, y = datasets.make_hv_bars(n_samples=400, random_state=0)
    assert set(np.unique(X)) <= {0.0, 1.0}
    images = X.reshape(-1, 28, 28)
    for image, label in zip(images, y):
        if label == 0:
            # every row is all ones or all zeros: full horizontal lines only
            assert np.all(image == image[:, :1])
        else:
            assert np.all(image == image[:1, :])


def test_hv_bars_flattening_is_row_major():
    X, y = datasets.make_hv_bars(n_samples=200, image_size=6, mean_bars=2.0, random_state=1)
    n_on = X.sum(axis=1)
    image = X[np.flatnonzero((y == 0) & (n_on > 0) & (n_on < 36))[0]]
    lines = image.reshape(6, 6)[:, 0]
    # a horizontal bar on row r lights up the contiguous block r*6 .. r*6+5
    np.testing.assert_array_equal(image, np.repeat(lines, 6))


def test_hv_bars_number_of_lines_is_poisson_mean_bars():
    X, y = datasets.make_hv_bars(n_samples=4000, random_state=2)
    images = X.reshape(-1, 28, 28)
    n_rows = images[y == 0][:, :, 0].sum(axis=1)
    n_cols = images[y == 1][:, 0, :].sum(axis=1)
    for counts in (n_rows, n_cols):
        assert abs(counts.mean() - 10.0) < 0.3
        assert abs(counts.var() - 10.0) < 1.5


def test_hv_bars_classes_are_rotations_of_each_other():
    X, y = datasets.make_hv_bars(n_samples=6000, image_size=10, mean_bars=3.0, random_state=3)
    images = X.reshape(-1, 10, 10)
    horizontal = images[y == 0].mean(axis=0)
    vertical_rotated = np.transpose(images[y == 1], (0, 2, 1)).mean(axis=0)
    # both are 0.3 everywhere up to sampling error
    np.testing.assert_allclose(horizontal, 0.3, atol=0.04)
    np.testing.assert_allclose(vertical_rotated, 0.3, atol=0.04)


def test_hv_bars_mean_bars_and_image_size():
    X, y = datasets.make_hv_bars(n_samples=2000, image_size=16, mean_bars=4.0, random_state=4)
    assert X.shape == (2000, 256)
    images = X.reshape(-1, 16, 16)
    lines = np.where(y == 0, images[:, :, 0].sum(axis=1), images[:, 0, :].sum(axis=1))
    assert abs(lines.mean() - 4.0) < 0.2
    assert lines.max() <= 16


# ---------------------------------------------------------------------------
# impulse (MORF experiment C)
# ---------------------------------------------------------------------------


def test_impulse_class_means_differ_after_onset_and_not_before():
    X, y = datasets.make_impulse(n_samples=40000, random_state=0)
    diff = X[y == 1].mean(axis=0) - X[y == 0].mean(axis=0)
    t = np.arange(100)
    expected = np.where(t >= 20, np.exp(-(t - 20.0)), 0.0)
    np.testing.assert_allclose(diff, expected, atol=0.05)
    assert abs(diff[20] - 1.0) < 0.05
    assert np.all(np.abs(diff[:20]) < 0.05)


def test_impulse_noise_is_standard_normal():
    X, y = datasets.make_impulse(n_samples=20000, random_state=1)
    noise = X[y == 0]
    np.testing.assert_allclose(noise.mean(axis=0), 0.0, atol=0.06)
    np.testing.assert_allclose(noise.std(axis=0), 1.0, atol=0.05)
    # the signal does not change the variance of class 1
    np.testing.assert_allclose(X[y == 1].std(axis=0), 1.0, atol=0.05)


def test_impulse_onset_and_decay_length_shape_the_signal():
    X, y = datasets.make_impulse(
        n_samples=40000, n_features=50, onset=5, decay_length=10.0, random_state=2
    )
    diff = X[y == 1].mean(axis=0) - X[y == 0].mean(axis=0)
    t = np.arange(50)
    expected = np.where(t >= 5, np.exp(-(t - 5.0) / 10.0), 0.0)
    np.testing.assert_allclose(diff, expected, atol=0.05)


def test_impulse_default_bayes_error_about_thirty_percent():
    X, y = datasets.make_impulse(n_samples=40000, random_state=3)
    t = np.arange(100)
    signal = np.where(t >= 20, np.exp(-(t - 20.0)), 0.0)
    # likelihood-ratio rule for a known signal in white Gaussian noise
    predicted = X @ signal > signal @ signal / 2
    error = np.mean(predicted != (y == 1))
    assert 0.28 < error < 0.31


# ---------------------------------------------------------------------------
# waveform (Breiman)
# ---------------------------------------------------------------------------


def test_waveform_class_means_match_convex_combination_means():
    h1, h2, h3 = _waveform_bases()
    X, y = datasets.make_waveform(n_samples=30000, random_state=0)
    expected = {0: (h1 + h2) / 2, 1: (h1 + h3) / 2, 2: (h2 + h3) / 2}
    for label, mean in expected.items():
        np.testing.assert_allclose(X[y == label].mean(axis=0), mean, atol=0.1)


def test_waveform_noiseless_rows_lie_on_segment_between_base_waves():
    h1, h2, h3 = _waveform_bases()
    pairs = {0: (h1, h2), 1: (h1, h3), 2: (h2, h3)}
    X, y = datasets.make_waveform(n_samples=300, noise=0.0, random_state=1)
    for row, label in zip(X, y):
        ha, hb = pairs[label]
        u = (row - hb) @ (ha - hb) / ((ha - hb) @ (ha - hb))
        assert -1e-12 <= u <= 1 + 1e-12
        np.testing.assert_allclose(row, u * ha + (1 - u) * hb, atol=1e-12)


def test_waveform_base_waves_peak_at_eleven_fifteen_seven():
    h1, h2, h3 = _waveform_bases()
    assert (h1.argmax() + 1, h2.argmax() + 1, h3.argmax() + 1) == (11, 15, 7)
    assert h1.max() == h2.max() == h3.max() == 6


def test_waveform_mixing_weight_is_uniform():
    h1, h2, _ = _waveform_bases()
    X, y = datasets.make_waveform(n_samples=9000, noise=0.0, random_state=2)
    rows = X[y == 0]
    u = (rows - h2) @ (h1 - h2) / ((h1 - h2) @ (h1 - h2))
    assert abs(u.mean() - 0.5) < 0.02
    assert abs(u.var() - 1 / 12) < 0.01


def test_waveform_noise_scales_residual():
    X0, y0 = datasets.make_waveform(n_samples=6000, noise=0.0, random_state=3)
    X2, y2 = datasets.make_waveform(n_samples=6000, noise=2.0, random_state=3)
    np.testing.assert_array_equal(y0, y2)
    # features 1 and 21 are zero in every base wave: pure noise
    assert np.all(X0[:, [0, 20]] == 0)
    np.testing.assert_allclose(X2[:, [0, 20]].std(axis=0), 2.0, atol=0.12)
    # the same seed gives the same waves, so the difference is the noise alone
    np.testing.assert_allclose((X2 - X0).std(), 2.0, atol=0.03)


def test_waveform_three_balanced_classes():
    _, y = datasets.make_waveform(n_samples=301, random_state=4)
    counts = np.bincount(y)
    assert counts.size == 3
    assert counts.max() - counts.min() <= 1
