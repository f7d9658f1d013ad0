"""scikit-learn's metadata routing for okcore's estimators.

With ``sklearn.set_config(enable_metadata_routing=True)``, scikit-learn's meta-estimators
(``Pipeline``, ``GridSearchCV``, ``cross_validate``, ...) pass ``sample_weight`` on only to
the estimators that request it: ``est.set_fit_request(sample_weight=True)`` (and
``set_score_request`` for ``score``), as scikit-learn's ``BaseEstimator`` provides. Only
``sample_weight`` is routed: one weight per row, which scikit-learn's cross-validation splits
with the rows (``gram``, ``kernel``, ``eval_set`` and ``output_weight`` are not per row).

The requests are kept in ``_metadata_request``, the attribute scikit-learn's ``clone``
copies, so a search's clones keep them. scikit-learn is imported only when these methods
are called: okcore runs without it.
"""

from __future__ import annotations

from typing import Any, ClassVar

#: scikit-learn's ``UNCHANGED`` (``metadata_routing.UNCHANGED``): leave a request as it is.
UNCHANGED = "$UNCHANGED$"


class MetadataRequests:
    """``set_fit_request`` / ``set_score_request`` / ``get_metadata_routing`` for the
    ``sample_weight`` of :attr:`routed_methods` (a request starts unset, None: passing a
    weight without a request is scikit-learn's error saying to set it)."""

    #: The methods whose ``sample_weight`` can be requested (those that take one).
    routed_methods: ClassVar[tuple[str, ...]] = ("fit", "score")

    def get_metadata_routing(self) -> Any:
        """scikit-learn's ``MetadataRequest`` of this estimator (a copy: changing it does
        not change the estimator's requests)."""
        from sklearn.utils.metadata_routing import MetadataRequest, get_routing_for_object

        requests = getattr(self, "_metadata_request", None)
        if requests is not None:
            return get_routing_for_object(requests)
        requests = MetadataRequest(owner=type(self).__name__)
        for method in self.routed_methods:
            getattr(requests, method).add_request(param="sample_weight", alias=None)
        return requests

    def set_fit_request(self, *, sample_weight: Any = UNCHANGED) -> Any:
        """Whether ``fit`` gets ``sample_weight`` from scikit-learn's meta-estimators: True
        (requested), False (not), None (unset: passing it raises), or a string (an alias,
        the name it is passed under). Only with metadata routing enabled."""
        return self._set_request("fit", sample_weight)

    def set_score_request(self, *, sample_weight: Any = UNCHANGED) -> Any:
        """Whether ``score`` gets ``sample_weight`` from scikit-learn's meta-estimators (as
        :meth:`set_fit_request`)."""
        return self._set_request("score", sample_weight)

    def _set_request(self, method: str, alias: Any) -> Any:
        """Record the request of ``sample_weight`` by ``method``; returns the estimator."""
        import sklearn

        if not sklearn.get_config()["enable_metadata_routing"]:
            raise RuntimeError(
                "This method is only available when metadata routing is enabled. You can "
                "enable it using sklearn.set_config(enable_metadata_routing=True)."
            )
        if method not in self.routed_methods:
            raise TypeError(
                f"{type(self).__name__}.{method} takes no sample_weight, so there is nothing "
                f"to request; request it for {' or '.join(self.routed_methods) or 'nothing'}"
            )
        if alias == UNCHANGED:
            return self
        requests = getattr(self, "_metadata_request", None)
        if requests is None:
            requests = self.get_metadata_routing()
        getattr(requests, method).add_request(param="sample_weight", alias=alias)
        self._metadata_request = requests
        return self
