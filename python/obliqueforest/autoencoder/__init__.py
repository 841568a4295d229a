"""Random forest autoencoder (RFAE): diffusion-map encoding and decoding with any forest.

A fitted forest defines the RF kernel ``K = (1/B) Π S Πᵀ`` on its training rows,
where ``Π`` (n × total leaves) is the sparse leaf-membership matrix read from the
Rust core's ``apply_leaves`` and ``S`` holds the inverse leaf sizes. ``K`` is
symmetric, doubly stochastic and positive semidefinite; its leading eigenvectors
give the diffusion map ``Z = √n V Λᵗ`` (the constant eigenvector dropped). New
rows are embedded with the Nyström formula ``Z₀ = K₀ Z Λ⁻¹``, which reduces to
one sparse product with a (total leaves × n_components) matrix precomputed at
fit time. Decoders map latent vectors back to the input space through the
forest's leaf regions (boxes computed in Rust by ``leaf_bounds``; for a categorical
column, the levels its training rows hold in each leaf).

A DataFrame's categorical columns are read as the forest estimators read them
(:mod:`obliqueforest._tables`), and the forest splits them by sets of levels.

Exact duplicate rows are collapsed before the kernel is built (and before an
unsupervised forest is grown): copies share every leaf, and a row repeated
several times, as in a bootstrap sample, would otherwise fill leaves on its own
and become a nearly disconnected clique that captures leading eigenvectors.

The n × n kernel is never stored densely: it is applied either as a
``scipy.sparse.linalg.LinearOperator`` (two sparse products with ``Π``) or, when
leaves are small enough that the explicit product has few nonzeros, as a
sparse matrix. Only tiny problems (at most ``_DENSE_EIGEN_MAX_N`` rows) are
solved with a dense eigendecomposition.

References
----------
.. [1] B. D. Vu, J. Kapar, M. N. Wright, D. S. Watson, "Autoencoding random
   forests", 2025. Sect. 3 (encoding), Sect. 4 and Appx. B, C (decoding),
   Sect. 5 (distortion).
.. [2] D. S. Watson, K. Blesch, J. Kapar, M. N. Wright, "Adversarial random
   forests for density estimation and generative modeling", AISTATS 2023.
.. [3] R. R. Coifman, S. Lafon, "Diffusion maps", Applied and Computational
   Harmonic Analysis 21 (2006).
"""

from ..plotting import plot_embedding
from ._estimator import ForestAutoencoder
from ._metrics import distortion

__all__ = ["ForestAutoencoder", "distortion", "plot_embedding"]
