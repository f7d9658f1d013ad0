"""Exceptions raised by okcore. Every message says what is wrong and how to fix it.

scikit-learn is optional: when it is installed, :class:`NotFittedError` also derives from
scikit-learn's, so ``except sklearn.exceptions.NotFittedError`` (pipelines, search tools,
``check_estimator``) catches okcore's; without it, it derives from the same two built-in
classes scikit-learn's does (ValueError, AttributeError), so okcore's behaviour is the same.
"""

try:
    from sklearn.exceptions import NotFittedError as _NotFittedBase
except ImportError:  # scikit-learn not installed: its NotFittedError's own bases

    class _NotFittedBase(ValueError, AttributeError):  # type: ignore[no-redef]
        """What scikit-learn's NotFittedError derives from."""


class OKCoreError(Exception):
    """Base class of every okcore error."""


class InvalidParameterError(OKCoreError, ValueError):
    """A hyper-parameter has an invalid type or value (checked in ``fit``)."""


class UnknownParameterError(InvalidParameterError):
    """Parameters an estimator does not take were named; ``unknown`` lists them (sorted),
    ``valid`` the estimator's parameters, for callers that word the error their own way."""

    def __init__(self, message: str, unknown: list[str], valid: list[str]) -> None:
        super().__init__(message)
        self.unknown, self.valid = unknown, valid


class DataError(OKCoreError, ValueError):
    """Inputs, outputs or Gram matrices have a wrong shape, NaN/inf, complex values, or are
    empty."""


class DataTypeError(DataError, TypeError):
    """Inputs or outputs hold an element that is not a number at all (a dict in an object
    array): a TypeError, as numpy's own conversion raises, and a DataError."""


class KernelError(DataError):
    """A Gram matrix is not a valid kernel (not square, symmetric, finite or PSD), or a kernel spec is unknown."""


class NotFittedError(OKCoreError, _NotFittedBase):
    """The estimator is used for prediction before ``fit``: a ValueError and an
    AttributeError, and scikit-learn's NotFittedError when scikit-learn is installed."""


class PersistenceError(OKCoreError):
    """A saved model is missing, corrupted, tampered with, or of an unknown format."""
