"""The ForestAutoencoder's parameters, declared once: its ``__init__``,
``_parameter_constraints`` and the docstring's Parameters section are derived from them
(:mod:`obliqueforest._surface`)."""

from __future__ import annotations

import numbers

from sklearn.utils._param_validation import Interval, StrOptions

from .._params import FOREST_PARAMS
from .._surface import Param, Surface

# the forest parameters it shares come from the forests' table, with its own defaults
AUTOENCODER_PARAMS = Surface(
    [
        Param(
            "n_components",
            2,
            [Interval(numbers.Integral, 1, None, closed="left")],
            "int",
            "Latent dimension ``d_Z``.",
        ),
        Param(
            "diffusion_time",
            1.0,
            [Interval(numbers.Real, 0, None, closed="left")],
            "float",
            "Diffusion time ``t`` in ``Z = √n V Λᵗ``.",
        ),
        Param(
            "decoder",
            "knn",
            [StrOptions({"knn", "relabel", "lasso"})],
            '{"knn", "relabel", "lasso"}',
            """``"knn"``: weighted mean (mode for categorical columns) of the ``k``
            training rows whose embeddings are nearest in kernel-PCA coordinates
            (whatever ``diffusion_time``), weights inversely proportional to the
            squared distance (each row is a point of its leaf-intersection region,
            where the paper draws one at random; see Notes). ``"relabel"``:
            every split relabeled as the best-matching axis split in latent space
            (global variant, Appx. B.2), latent rows routed through the relabeled
            trees, the agreed region sampled. ``"lasso"``: exclusive-lasso leaf scores
            and greedy consistent leaf assignment (Appx. C). ``"relabel"`` and
            ``"lasso"`` are much slower than ``"knn"`` and meant for small data.""",
        ),
        Param(
            "k",
            10,
            [Interval(numbers.Integral, 1, None, closed="left")],
            "int",
            "Number of neighbours of the k-NN decoder (the paper uses 20; see Notes).",
        ),
        Param(
            "forest",
            None,
            "no_validation",
            "estimator or None",
            """A forest estimator of this library, fitted or not. An unfitted one is
            cloned and fitted on ``(X, y)`` (``y`` required), or on ``X`` alone for a
            forest grown without targets (:class:`~obliqueforest.UnsupervisedRandomForest`,
            on any projection family); a forest that splits categorical columns
            takes a DataFrame ``X`` itself (one that takes numeric columns only, such as
            MORF, takes its integer codes). A fitted one is used as is and must have
            been fitted on the columns of ``X`` in order: with the same DataFrame (its
            category, object, string and bool columns categorical, as
            ``categorical_features="from_dtype"`` takes them, with the same levels; a
            ValueError says when they differ), or on the integer codes of the
            categorical columns as numbers. ``None`` grows the forest here: supervised
            on ``y`` when ``y`` is given (classification for class labels, regression
            otherwise), else as chosen by ``unsupervised``.""",
        ),
        Param(
            "unsupervised",
            "adversarial",
            [StrOptions({"adversarial", "random"})],
            '{"adversarial", "random"}',
            """The forest grown when ``forest`` is None and ``y`` is None.
            ``"adversarial"``: an adversarial random forest (Watson et al. 2023),
            rounds of real-versus-synthetic classification with synthetic rows drawn
            from the product of per-leaf marginals, until the OOB accuracy is at
            most ``0.5 + arf_delta`` or stops improving; the last round's generator
            is kept. ``"random"``: a completely random forest (each split on one
            random feature fitted to pure noise), one fit only.""",
        ),
        FOREST_PARAMS["n_estimators"].replace(default=200, doc="Trees of a forest grown here."),
        Param(
            "min_samples_leaf",
            "auto",
            [StrOptions({"auto"}), Interval(numbers.Integral, 1, None, closed="left")],
            'int or "auto"',
            """Minimum leaf size of a forest grown here. ``"auto"``: 12 for the
            adversarial forest, whose leaves are counted over real and synthetic
            rows (as many synthetic as real), so about 6 real rows (see Notes), or
            ``n / 6`` (at least 5) for fewer than 72 distinct rows; 5 for a
            supervised or completely random forest, whose leaves hold real rows only.
            Small leaves make the kernel close to the identity and the embedding
            uninformative; keep several rows per leaf.""",
        ),
        Param(
            "max_features",
            "auto",
            [
                None,
                StrOptions({"auto", "sqrt", "log2"}),
                Interval(numbers.Integral, 1, None, closed="left"),
                Interval(numbers.Real, 0, 1, closed="right"),
            ],
            '{"auto", "sqrt", "log2"}, int, float or None',
            """Candidate features per split of an adversarial or supervised forest.
            ``"auto"``: 1 for the adversarial forest (each split on one random feature,
            its threshold chosen by the real-versus-synthetic criterion, so that every
            column is split on; see Notes), ``"sqrt"`` for a supervised forest.""",
        ),
        FOREST_PARAMS["max_depth"].replace(
            type="int or None", doc="Maximum depth of a forest grown here."
        ),
        Param(
            "arf_delta",
            0.0,
            [Interval(numbers.Real, 0, 0.5, closed="both")],
            "float",
            "Tolerance of the adversarial stopping rule.",
        ),
        Param(
            "arf_max_iter",
            10,
            [Interval(numbers.Integral, 1, None, closed="left")],
            "int",
            """Maximum number of adversarial rounds after the first forest (each
            resynthesises the data from the current forest's leaves and trains a
            new discriminator), as ``max_iters`` of the R package ``arf``.""",
        ),
        Param(
            "kernel",
            "auto",
            [StrOptions({"auto", "operator", "sparse"})],
            '{"auto", "operator", "sparse"}',
            """How the n × n kernel is applied: as a LinearOperator (two products with
            the sparse leaf matrix), as an explicit sparse matrix, or chosen by the
            expected number of nonzeros. It is never stored densely.""",
        ),
        Param(
            "collapse_duplicates",
            True,
            ["boolean"],
            "bool",
            """Build the kernel and diffusion map on the distinct rows of ``X`` (copies
            get their row's embedding, and the k-NN decoder searches distinct rows),
            and grow an unsupervised forest on the distinct rows. Copies of a row
            share every leaf of every forest, so they add no geometric information;
            kept, a row repeated m times (as in a bootstrap sample, where a third
            of the rows are repeats) can fill whole leaves by itself, which makes it
            an almost disconnected clique of the kernel graph: its leading
            eigenvectors then localise on a handful of such cliques and the latent
            dimensions are wasted on them. A supervised forest is still grown on
            every row and its label. ``False`` uses every row as given.""",
        ),
        FOREST_PARAMS["random_state"].replace(
            doc="Seeds the forest, the eigensolver's start vector and decoding draws."
        ),
        FOREST_PARAMS["n_jobs"].replace(
            type="int or None",
            doc="Threads for growing and applying the forest (None means 1, -1 all).",
        ),
        FOREST_PARAMS["verbose"].replace(
            doc="Show a progress bar of the trees grown (every adversarial round has its own)."
        ),
    ],
    positional=1,
)
