"""Exceptions raised by okcore. Every message says what is wrong and how to fix it."""


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
    """Inputs, outputs or Gram matrices have a wrong shape, NaN/inf, or are empty."""


class KernelError(DataError):
    """A Gram matrix is not a valid kernel (not square, symmetric, finite or PSD), or a kernel spec is unknown."""


class NotFittedError(OKCoreError, AttributeError):
    """The estimator is used for prediction before ``fit``."""


class PersistenceError(OKCoreError):
    """A saved model is missing, corrupted, tampered with, or of an unknown format."""
