"""Simulated classification problems from the papers behind obliqueforest.

Every generator returns ``(X, y)`` with ``X`` a float64 array of shape
``(n_samples, n_features)`` and ``y`` an int64 array of class labels
``0, ..., K - 1``.  All of them accept ``random_state`` as ``None`` (use the
global :mod:`numpy.random` state), an int seed, a
:class:`numpy.random.RandomState` or a :class:`numpy.random.Generator`.

* SPORF (Tomita et al., 2020, Sect. 4.1-4.2): :func:`make_sparse_parity`,
  :func:`make_orthant`, :func:`make_trunk`, :func:`make_consistency`.
* MORF (Perry et al., Sect. 5.1): :func:`make_circle_segments`,
  :func:`make_hv_bars`, :func:`make_impulse`.
* Breiman's waveform data, used by Blaser & Fryzlewicz (2021) (UCI "WAVE"):
  :func:`make_waveform`.

Where the classes have equal priors (Trunk, called "balanced" in the SPORF
paper; Breiman's waveform; the MORF problems, whose paper shows two classes and
states no prior), the class counts are made exactly balanced (they differ by at
most one) and the samples are shuffled.  Where the label is a
function of a uniformly drawn ``X`` (sparse parity, orthant, consistency), the
labels are whatever ``X`` gives, exactly as the papers define them.
"""

import numbers

import numpy as np

__all__ = [
    "make_circle_segments",
    "make_consistency",
    "make_hv_bars",
    "make_impulse",
    "make_orthant",
    "make_sparse_parity",
    "make_trunk",
    "make_waveform",
]


# ---------------------------------------------------------------------------
# argument checking helpers
# ---------------------------------------------------------------------------


def _check_random_state(random_state):
    """Turn ``random_state`` into a RandomState or Generator.

    ``None`` gives the global RandomState of :mod:`numpy.random` (so that
    ``np.random.seed`` makes calls reproducible, as in scikit-learn), an int
    seeds a fresh :class:`numpy.random.RandomState`, and RandomState or
    Generator instances are used as they are.  Only methods that both classes
    share (``uniform``, ``normal``, ``poisson``, ``choice``, ``permutation``)
    are used by the generators.
    """
    if random_state is None or random_state is np.random:
        return np.random.mtrand._rand
    if isinstance(random_state, (np.random.RandomState, np.random.Generator)):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if not 0 <= random_state < 2**32:
            raise ValueError(f"random_state must be in [0, 2**32 - 1], got {random_state!r}")
        return np.random.RandomState(int(random_state))
    raise ValueError(
        "random_state must be None, an int, a numpy.random.RandomState or a "
        f"numpy.random.Generator, got {random_state!r}"
    )


def _check_int(value, name, min_value, max_value=None):
    """Check that ``value`` is an integer scalar (not bool) in the given range."""
    arr = np.asarray(value)
    if arr.ndim != 0 or arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(arr)
    if value < min_value:
        raise ValueError(f"{name} must be >= {min_value}, got {value}")
    if max_value is not None and value > max_value:
        raise ValueError(f"{name} must be <= {max_value}, got {value}")
    return value


def _check_float(value, name, min_value, strict):
    """Check that ``value`` is a finite real scalar, > (strict) or >= ``min_value``."""
    arr = np.asarray(value)
    if arr.ndim != 0 or arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a real number, got {value!r}")
    value = float(arr)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if strict and value <= min_value:
        raise ValueError(f"{name} must be > {min_value}, got {value}")
    if not strict and value < min_value:
        raise ValueError(f"{name} must be >= {min_value}, got {value}")
    return value


def _balanced_labels(n_samples, n_classes, rng):
    """Labels 0..n_classes-1 with counts differing by at most one, shuffled."""
    return rng.permutation(np.arange(n_samples, dtype=np.int64) % n_classes).astype(np.int64)


# ---------------------------------------------------------------------------
# SPORF (Tomita et al., 2020)
# ---------------------------------------------------------------------------


def make_sparse_parity(n_samples=1000, n_features=20, n_informative=3, random_state=None):
    """Sparse parity: the parity of the number of positive informative features.

    ``X_1, ..., X_p`` are i.i.d. ``U(-1, 1)``.  With
    ``Q = sum_{j <= p*} I(X_j > 0)`` over the first ``p* = n_informative``
    features, the label is ``Y = odd(Q)``: 1 if ``Q`` is odd, 0 if it is even.
    The remaining ``p - p*`` features are pure noise, and no proper subset of
    the informative features carries any information about ``Y``.  The Bayes
    error is zero.  The paper uses ``p* = 3`` and ``p = 20``.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of samples, >= 1.
    n_features : int, default=20
        Total number of features ``p``, >= 1.
    n_informative : int, default=3
        Number ``p*`` of leading features that determine the label,
        ``1 <= n_informative <= n_features``.  (The paper requires ``p* < p``;
        ``p* = p``, the problem without noise features, is allowed here.)
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Source of randomness.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
        Features, uniform on ``[-1, 1]^p``.
    y : ndarray of shape (n_samples,), int64
        Class labels in ``{0, 1}``.  Classes are balanced in expectation (the
        labels are a function of ``X``; counts are not forced).

    References
    ----------
    .. [1] T. M. Tomita, J. Browne, C. Shen, J. Chung, J. L. Patsolic,
       B. Falk, J. Yim, C. E. Priebe, R. Burns, M. Maggioni and
       J. T. Vogelstein, "Sparse Projection Oblique Randomer Forests",
       Journal of Machine Learning Research 21, 2020, Sect. 4.2
       ("Sparse Parity").
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    n_features = _check_int(n_features, "n_features", 1)
    n_informative = _check_int(n_informative, "n_informative", 1)
    if n_informative > n_features:
        raise ValueError(f"n_informative must be <= n_features ({n_features}), got {n_informative}")
    rng = _check_random_state(random_state)
    X = rng.uniform(-1.0, 1.0, size=(n_samples, n_features)).astype(np.float64)
    q = np.count_nonzero(X[:, :n_informative] > 0, axis=1)
    y = (q % 2).astype(np.int64)
    return X, y


def make_orthant(n_samples=1000, n_features=6, random_state=None):
    """Orthant: the class is the orthant of ``R^p`` the sample lies in.

    ``X_1, ..., X_p`` are i.i.d. ``U(-1, 1)`` and the label is the index of
    the orthant containing ``X``, so there are ``2^p`` classes and every
    feature is strongly and equally informative.  The paper only asks for
    "a unique integer index" per orthant; here the index is the binary number
    whose bit ``j`` is ``I(X_{j+1} > 0)``::

        y = sum_{j=0}^{p-1} 2^j * I(X[:, j] > 0)

    so ``y = 0`` is the all-negative orthant and ``y = 2^p - 1`` the
    all-positive one.  The paper uses ``p = 6`` (64 classes).

    Parameters
    ----------
    n_samples : int, default=1000
        Number of samples, >= 1.
    n_features : int, default=6
        Dimension ``p``, ``1 <= p <= 62`` (so that ``2^p`` fits in int64).
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Source of randomness.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
        Features, uniform on ``[-1, 1]^p``.
    y : ndarray of shape (n_samples,), int64
        Orthant index in ``0 .. 2^p - 1``.  Each orthant has probability
        ``2^-p`` (counts are not forced; with ``n_samples < 2^p`` some
        classes are necessarily absent).

    References
    ----------
    .. [1] T. M. Tomita et al., "Sparse Projection Oblique Randomer Forests",
       Journal of Machine Learning Research 21, 2020, Sect. 4.2
       ("Orthant").
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    n_features = _check_int(n_features, "n_features", 1, 62)
    rng = _check_random_state(random_state)
    X = rng.uniform(-1.0, 1.0, size=(n_samples, n_features)).astype(np.float64)
    weights = np.left_shift(np.int64(1), np.arange(n_features, dtype=np.int64))
    y = ((X > 0).astype(np.int64) @ weights).astype(np.int64)
    return X, y


def make_trunk(n_samples=1000, n_features=10, random_state=None):
    """Trunk: two spherical Gaussians with slowly decaying mean differences.

    Class 1 is ``N(mu, I_p)`` and class 0 is ``N(-mu, I_p)`` with
    ``mu = (1, 1/sqrt(2), 1/sqrt(3), ..., 1/sqrt(p))``.  Every feature is
    informative, each less than the previous one.  The Bayes decision
    boundary is the hyperplane ``mu^T x = 0`` and the Bayes error is
    ``Phi(-||mu||)`` with ``||mu||^2 = sum_{j<=p} 1/j``.  The paper uses
    ``p = 10``.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of samples, >= 1.
    n_features : int, default=10
        Dimension ``p``, >= 1.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Source of randomness.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
        Features.
    y : ndarray of shape (n_samples,), int64
        Class labels in ``{0, 1}``; the problem is balanced, so the two
        class counts differ by at most one (in random order).

    References
    ----------
    .. [1] T. M. Tomita et al., "Sparse Projection Oblique Randomer Forests",
       Journal of Machine Learning Research 21, 2020, Sect. 4.2
       ("Trunk").
    .. [2] G. V. Trunk, "A problem of dimensionality: a simple example",
       IEEE Transactions on Pattern Analysis and Machine Intelligence 1(3),
       1979, pp. 306-307.
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    n_features = _check_int(n_features, "n_features", 1)
    rng = _check_random_state(random_state)
    y = _balanced_labels(n_samples, 2, rng)
    mu = 1.0 / np.sqrt(np.arange(1, n_features + 1, dtype=np.float64))
    sign = np.where(y == 1, 1.0, -1.0)
    X = rng.normal(0.0, 1.0, size=(n_samples, n_features)) + sign[:, None] * mu[None, :]
    return X.astype(np.float64), y


def make_consistency(n_samples=1000, n_stripes=40, random_state=None):
    """Biau et al.'s (2008) problem on which Breiman's random forest is inconsistent.

    ``X`` is uniform on ``[0,1]^2 U [1,2]^2 U [2,3]^2`` (each unit square
    has probability 1/3) and the label is a deterministic function
    ``f(X)``:

    * lower-left square ``[0,1]^2``: vertical stripes, alternating along
      ``x_1``: ``f = floor(n_stripes * x_1) mod 2``;
    * centre square ``[1,2]^2``: a 2 x 2 checkerboard,
      ``f = (floor(2 (x_1 - 1)) + floor(2 (x_2 - 1))) mod 2``;
    * upper-right square ``[2,3]^2``: horizontal stripes, alternating along
      ``x_2``: ``f = floor(n_stripes * (x_2 - 2)) mod 2``.

    The Bayes error is zero.  In the population, no single axis-aligned
    split of the centre square reduces impurity (each half is still half 0,
    half 1), whereas splits in the striped squares always do; a greedy
    axis-aligned tree therefore spends its splits on the stripes and, as
    long as there are stripes left to split, leaves the checkerboard whole,
    misclassifying half of it: Biau et al. show that such a forest cannot
    reach an error below ``1/3 * 1/2 = 1/6``.  Oblique splits do cut the
    checkerboard profitably.

    **The stripe count.**  In the paper each striped square holds
    "countably infinite" stripes, which cannot be sampled; here each holds
    ``n_stripes`` stripes of equal width ``1 / n_stripes``, alternating
    ``0, 1, 0, ...`` from the square's lower (left) edge.  The choice
    matters:

    * If the sample resolves the stripes (``n_samples / (3 n_stripes)``
      points per stripe, say tens of points or more) and the trees are grown
      to purity, as in a standard random forest, the forest learns every
      stripe and, once those cells are pure, splits the checkerboard as well:
      its error goes to zero and the 1/6 floor does not appear.  With a few
      dozen stripes this happens at a few thousand samples.
    * The 1/6 floor is what greedy axis-aligned trees reach when they have
      fewer leaves than there are stripes (the infinite-stripe limit): all
      splits go to the stripes, none to the centre.  For example, with the
      default 40 stripes, scikit-learn's ``RandomForestClassifier`` with
      ``max_leaf_nodes=64`` trained on 30,000 points resolves the stripes
      but leaves the centre at error 1/2, about 1/6 overall (grown to
      purity, the same forest's error is below 0.01).
    * If the stripes are finer than the sample can resolve (``n_stripes``
      comparable to or larger than ``n_samples / 3``), the labels in the
      striped squares look like fair coin flips to every learner, oblique
      or not, and all error rates approach ``2/3 * 1/2 = 1/3``.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of samples, >= 1.
    n_stripes : int, default=40
        Number of equal-width stripes in each of the two striped squares,
        >= 2 (see above).  With an odd count the stripes with label 0
        outnumber those with label 1 by one.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Source of randomness.

    Returns
    -------
    X : ndarray of shape (n_samples, 2), float64
        Points in ``[0, 3]^2``, each in one of the three diagonal unit
        squares.
    y : ndarray of shape (n_samples,), int64
        ``f(X)`` in ``{0, 1}``; with an even ``n_stripes`` both classes have
        probability 1/2 (counts are not forced).

    References
    ----------
    .. [1] T. M. Tomita et al., "Sparse Projection Oblique Randomer Forests",
       Journal of Machine Learning Research 21, 2020, Sect. 4.1 and
       Fig. 1.
    .. [2] G. Biau, L. Devroye and G. Lugosi, "Consistency of random forests
       and other averaging classifiers", Journal of Machine Learning
       Research 9, 2008, pp. 2015-2033.
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    n_stripes = _check_int(n_stripes, "n_stripes", 2)
    rng = _check_random_state(random_state)
    square = rng.choice(3, size=n_samples)
    U = rng.uniform(0.0, 1.0, size=(n_samples, 2))
    X = (U + square[:, None]).astype(np.float64)
    vertical = np.floor(n_stripes * U[:, 0]).astype(np.int64) % 2
    checker = (np.floor(2 * U[:, 0]) + np.floor(2 * U[:, 1])).astype(np.int64) % 2
    horizontal = np.floor(n_stripes * U[:, 1]).astype(np.int64) % 2
    y = np.select([square == 0, square == 1], [vertical, checker], default=horizontal)
    return X, y.astype(np.int64)


# ---------------------------------------------------------------------------
# MORF (Perry et al.)
# ---------------------------------------------------------------------------


def make_circle_segments(n_samples=1000, n_features=100, random_state=None):
    """Two segments of ones on a discretised circle; the segment lengths give the class.

    Each sample is a circle discretised into ``n_features`` cyclically
    adjacent binary features holding two non-adjacent segments (runs) of
    ones and zeros elsewhere.  Class 0 has two segments of length 5, class 1
    one of length 4 and one of length 6; every sample therefore has exactly
    10 ones and the classes differ only in how they are grouped.  The
    segments are placed uniformly at random among all placements with at
    least one zero between them on both sides, with wrap-around: the first
    segment starts at a uniform position, and the gap of zeros after it is
    uniform on ``1 .. n_features - 11`` (the other gap takes the rest).
    (The paper's "class 1" and "class 2" are labels 0 and 1 here.)

    Parameters
    ----------
    n_samples : int, default=1000
        Number of samples, >= 1.
    n_features : int, default=100
        Number of points on the circle, >= 12 (ten ones and two separating
        zeros).  The paper uses 100.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Source of randomness.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
        Binary (0.0 / 1.0) features; feature ``n_features - 1`` is adjacent
        to feature 0.
    y : ndarray of shape (n_samples,), int64
        0 for segments 5 + 5, 1 for segments 4 + 6; counts differ by at most
        one (in random order).

    References
    ----------
    .. [1] R. Perry, T. M. Tomita, R. Mehta, J. Arroyo, J. Patsolic, B. Falk
       and J. T. Vogelstein, "Manifold Oblique Random Forests: Closing the
       Gap to Convolutional Deep Networks", Sect. 5.1, Experiment (A).
    .. [2] R. Perry, T. M. Tomita, J. Patsolic, B. Falk and J. T. Vogelstein,
       "Manifold Forests: Closing the Gap on Neural Networks" (earlier
       version of [1]), Sect. 4.1, Experiment (A).
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    n_features = _check_int(n_features, "n_features", 12)
    rng = _check_random_state(random_state)
    y = _balanced_labels(n_samples, 2, rng)
    first = np.where(y == 0, 5, 4)
    second = np.where(y == 0, 5, 6)
    start = rng.choice(n_features, size=n_samples)
    gap = 1 + rng.choice(n_features - 11, size=n_samples)
    # position of every feature relative to the start of the first segment
    rel = (np.arange(n_features)[None, :] - start[:, None]) % n_features
    second_start = (first + gap)[:, None]
    ones = (rel < first[:, None]) | ((rel >= second_start) & (rel < second_start + second[:, None]))
    return ones.astype(np.float64), y


def make_hv_bars(n_samples=1000, image_size=28, mean_bars=10.0, random_state=None):
    """Binary images of horizontal (class 0) or vertical (class 1) bars.

    For each image ``k ~ Poisson(mean_bars)`` bars are drawn and spread over
    the rows (class 0) or the columns (class 1): ``min(k, image_size)``
    distinct rows (columns) are chosen uniformly at random without
    replacement and set to one over their full length.  Chosen rows that
    are adjacent merge into thicker bars, which gives the paper's "randomly
    sized and spaced" bars.  The two class distributions are exact 90 degree
    rotations of each other, as the paper states.  The paper uses 28 x 28
    images and ``mean_bars = 10``; images with ``k = 0`` (probability
    ``exp(-10)``) are blank in both classes.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of images, >= 1.
    image_size : int, default=28
        Height and width of the square images, >= 2.
    mean_bars : float, default=10.0
        Poisson rate of the number of bars per image, > 0.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Source of randomness.

    Returns
    -------
    X : ndarray of shape (n_samples, image_size * image_size), float64
        Binary (0.0 / 1.0) images flattened row-major (C order): pixel
        ``(r, c)`` is column ``r * image_size + c``; use
        ``X.reshape(-1, image_size, image_size)`` to recover the images.
    y : ndarray of shape (n_samples,), int64
        0 for horizontal bars, 1 for vertical bars; counts differ by at most
        one (in random order).

    References
    ----------
    .. [1] R. Perry et al., "Manifold Oblique Random Forests: Closing the Gap
       to Convolutional Deep Networks", Sect. 5.1, Experiment (B).
    .. [2] R. Perry et al., "Manifold Forests: Closing the Gap on Neural
       Networks" (earlier version of [1]), Sect. 4.1, Experiment (B).
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    image_size = _check_int(image_size, "image_size", 2)
    mean_bars = _check_float(mean_bars, "mean_bars", 0.0, strict=True)
    rng = _check_random_state(random_state)
    y = _balanced_labels(n_samples, 2, rng)
    k = np.minimum(rng.poisson(mean_bars, size=n_samples), image_size)
    # a uniformly random subset of size k per image: the k smallest of
    # i.i.d. uniform keys
    keys = rng.uniform(0.0, 1.0, size=(n_samples, image_size))
    ranks = np.argsort(np.argsort(keys, axis=1), axis=1)
    lines = ranks < k[:, None]
    horizontal = np.broadcast_to(lines[:, :, None], (n_samples, image_size, image_size))
    vertical = np.broadcast_to(lines[:, None, :], (n_samples, image_size, image_size))
    images = np.where((y == 0)[:, None, None], horizontal, vertical)
    return images.reshape(n_samples, image_size * image_size).astype(np.float64), y


def make_impulse(n_samples=1000, n_features=100, onset=20, decay_length=1.0, random_state=None):
    """White noise versus white noise plus an exponentially decaying unit step.

    With time ``t = 0, ..., n_features - 1`` (the feature index) and
    ``eps_t`` i.i.d. ``N(0, 1)``::

        class 0:  x_t = eps_t
        class 1:  x_t = u(t - onset) * exp(-(t - onset) / decay_length) + eps_t

    where ``u`` is the unit step (``u(0) = 1``), so the signal is 1 at
    ``t = onset`` and decays afterwards.  The paper prints the signal as
    ``u(t - 20) e^{(t - 20)}``, which grows; its text and figure describe an
    exponentially *decaying* step, which is implemented (``decay_length = 1``
    is the paper's ``e^{-(t-20)}``).  With ``decay_length = 1`` the signal
    has norm ``(1 - e^{-2})^{-1/2} ~ 1.075`` and the Bayes error is
    ``Phi(-1.075 / 2) ~ 0.30``; a larger ``decay_length`` gives a wider,
    easier signal.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of series, >= 1.
    n_features : int, default=100
        Length of each series, >= 1.  The paper uses 100.
    onset : int, default=20
        Time index at which the step starts, ``0 <= onset < n_features``.
    decay_length : float, default=1.0
        Decay length (time constant) of the exponential, > 0.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Source of randomness.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
        The series.
    y : ndarray of shape (n_samples,), int64
        0 for noise only, 1 for noise plus signal; counts differ by at most
        one (in random order).

    References
    ----------
    .. [1] R. Perry et al., "Manifold Oblique Random Forests: Closing the Gap
       to Convolutional Deep Networks", Sect. 5.1, Experiment (C).
    .. [2] R. Perry et al., "Manifold Forests: Closing the Gap on Neural
       Networks" (earlier version of [1]), Sect. 4.1, Experiment (C).
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    n_features = _check_int(n_features, "n_features", 1)
    onset = _check_int(onset, "onset", 0)
    if onset >= n_features:
        raise ValueError(f"onset must be < n_features ({n_features}), got {onset}")
    decay_length = _check_float(decay_length, "decay_length", 0.0, strict=True)
    rng = _check_random_state(random_state)
    y = _balanced_labels(n_samples, 2, rng)
    t = np.arange(n_features, dtype=np.float64)
    signal = np.where(t >= onset, np.exp(-np.maximum(t - onset, 0.0) / decay_length), 0.0)
    X = rng.normal(0.0, 1.0, size=(n_samples, n_features)) + (y == 1)[:, None] * signal
    return X.astype(np.float64), y


# ---------------------------------------------------------------------------
# Breiman's waveform data (used by Blaser & Fryzlewicz)
# ---------------------------------------------------------------------------


def _waveform_bases():
    """Breiman's three triangular base waves on i = 1..21, shape (3, 21)."""
    i = np.arange(1, 22, dtype=np.float64)
    h1 = np.maximum(6.0 - np.abs(i - 11.0), 0.0)
    h2 = np.maximum(6.0 - np.abs(i - 15.0), 0.0)  # h1(i - 4)
    h3 = np.maximum(6.0 - np.abs(i - 7.0), 0.0)  # h1(i + 4)
    return np.stack([h1, h2, h3])


# (a, b) base-wave indices of the convex combination u * h_a + (1 - u) * h_b
_WAVEFORM_PAIRS = np.array([[0, 1], [0, 2], [1, 2]])


def make_waveform(n_samples=300, noise=1.0, random_state=None):
    """Breiman's waveform-21 data: 3 classes of noisy mixtures of triangular waves.

    With the base waves (``i = 1, ..., 21``)::

        h1(i) = max(6 - |i - 11|, 0)     (peak 6 at i = 11)
        h2(i) = h1(i - 4)                (peak at i = 15)
        h3(i) = h1(i + 4)                (peak at i = 7)

    a sample of class ``c`` is ``x_i = u h_a(i) + (1 - u) h_b(i) + eps_i``
    with ``u ~ U(0, 1)`` drawn once per sample, ``eps_i`` i.i.d.
    ``N(0, noise^2)`` and ``(a, b) = (1, 2), (1, 3), (2, 3)`` for classes
    ``c = 0, 1, 2``.  The class mean is therefore ``(h_a + h_b) / 2``.
    Breiman's classes have equal priors; here the counts are made exactly
    balanced.  The Bayes error with ``noise = 1`` is about 0.14.

    Parameters
    ----------
    n_samples : int, default=300
        Number of samples, >= 1 (300 is Breiman's training-set size; the
        UCI "WAVE" set used by Blaser & Fryzlewicz has 5000).
    noise : float, default=1.0
        Standard deviation of the Gaussian noise, >= 0.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Source of randomness.

    Returns
    -------
    X : ndarray of shape (n_samples, 21), float64
        The noisy waves.
    y : ndarray of shape (n_samples,), int64
        Class labels in ``{0, 1, 2}``; counts differ by at most one (in
        random order).

    References
    ----------
    .. [1] R. Blaser and P. Fryzlewicz, "Regularizing axis-aligned ensembles
       via data rotations that favor simpler learners", Statistics and
       Computing 31, 2021, Sect. 5, Tables 1-3 (data set "WAVE").
    .. [2] L. Breiman, J. H. Friedman, R. A. Olshen and C. J. Stone,
       *Classification and Regression Trees*, Wadsworth, 1984, Sect. 2.6.2
       (the waveform recognition problem).
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    noise = _check_float(noise, "noise", 0.0, strict=False)
    rng = _check_random_state(random_state)
    y = _balanced_labels(n_samples, 3, rng)
    bases = _waveform_bases()
    u = rng.uniform(0.0, 1.0, size=n_samples)
    pairs = _WAVEFORM_PAIRS[y]
    X = u[:, None] * bases[pairs[:, 0]] + (1.0 - u)[:, None] * bases[pairs[:, 1]]
    X = X + noise * rng.normal(0.0, 1.0, size=(n_samples, 21))
    return X.astype(np.float64), y
