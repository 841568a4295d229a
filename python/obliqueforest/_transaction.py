"""Transactional fits: an estimator changes only when a fit succeeds.

:class:`TransactionalFit` gives an estimator ``_transaction(fit, *args)``, which runs
``fit`` on a draft (a private copy of the estimator's state) and publishes the draft's
state in one step, one rebinding of ``__dict__``, only when ``fit`` returns. A fit refused
or interrupted anywhere (a parameter check, the memory guard, Ctrl-C, a bad y) leaves the
previous model as it was, fully usable.

Readers take the state once (``_fitted()``, a view sharing the dict published last; the
dict of a published state is never changed in place by a fit), so predict, pickle and
save running while another thread refits see the old model or the new one, never parts
of both. Adopting it::

    class MyEstimator(TransactionalFit, BaseEstimator):
        def fit(self, X, y):
            return self._transaction(type(self)._fit_draft, X, y)

        def _fit_draft(self, X, y):  # the former body of fit, setting attributes on self
            ...

        def predict(self, X):
            est = self._fitted()  # then read est, not self
            ...
"""

from __future__ import annotations

import copy

__all__ = ["TransactionalFit", "fitted_params"]


def fitted_params(est) -> dict:
    """``est.get_params(deep=False)`` as the fit that just ended used them: a copy that a
    later ``set_params`` (or a list changed in place) leaves alone, kept as ``_fit_params``
    so that a model file records the parameters its model was fitted with. A
    ``random_state`` generator and a given ``forest`` are kept by reference (what they
    are, not their contents, is the parameter)."""
    return {
        k: v if k in ("random_state", "forest") else copy.deepcopy(v)
        for k, v in est.get_params(deep=False).items()
    }


class TransactionalFit:
    """Mixin for a scikit-learn estimator whose fits are transactions (see the module)."""

    #: What a fit sets besides its fitted attributes (names ending in "_").
    _private_fit_state: frozenset = frozenset()

    def _fit_state(self, name: str) -> bool:
        """Whether attribute ``name`` belongs to a fit's result."""
        return (name.endswith("_") and not name.startswith("__")) or (
            name in self._private_fit_state or name == "_fit_params"
        )

    def _extends_fit(self) -> bool:
        """Whether the next fit extends the current model (a warm start) rather than
        replacing it; then the draft starts from the current fit's state."""
        return False

    def _fitted(self):
        """This estimator as one fit left it: a view sharing the state published last,
        which it keeps reading whatever fits other threads publish meanwhile."""
        view = object.__new__(type(self))
        view.__dict__ = self.__dict__
        return view

    def _transaction(self, fit, *args):
        """Runs ``fit(draft, *args)`` on a copy of this estimator's state and publishes the
        draft's state only when it returns; returns self.

        The draft holds the parameters (and anything else set on the estimator, such as
        metadata requests) but none of the previous fit's state unless the fit extends
        that model (:meth:`_extends_fit`): a fit's attributes all come from that fit.
        """
        state = dict(self.__dict__)
        if not self._extends_fit():
            params = self.get_params(deep=False)
            state = {k: v for k, v in state.items() if k in params or not self._fit_state(k)}
        draft = object.__new__(type(self))
        draft.__dict__ = state
        fit(draft, *args)
        draft._fit_params = fitted_params(draft)
        self.__dict__ = draft.__dict__  # one step: readers see the old state or the new
        return self
