"""Service errors: each carries its HTTP status and a stable code.

Every failure, including request validation and okcore's data errors, is
answered with one JSON shape::

    {"error": {"status": 422, "code": "invalid_data",
               "message": "gram must be square: got 300 x 299",
               "details": [...]}}

``details`` is a list (possibly empty) of objects with ``loc`` (where in the
request) and ``msg``.
"""

from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    """Base of the service's errors; ``status`` and ``code`` go to the client."""

    status: int = 500
    code: str = "internal_error"
    headers: dict[str, str] = {}  # per class, read-only

    def __init__(
        self,
        message: str,
        *,
        details: list[dict[str, Any]] | None = None,
        loc: list[str | int] | None = None,
    ) -> None:
        """``loc``: the field the message is about (its path in the request, as in
        ``details``); without ``details``, the one detail is then that field and the
        message."""
        super().__init__(message)
        self.message = message
        self.details = details or ([{"loc": loc, "msg": message}] if loc is not None else [])

    def body(self) -> dict[str, Any]:
        return error_body(self.status, self.code, self.message, self.details)


class InvalidRequest(ServiceError):
    """The request is malformed or its data cannot be used (422)."""

    status = 422
    code = "invalid_data"


class FieldError(ValueError):
    """A request model's validator refusing a field: a ValueError, so pydantic reports it
    as a validation error (a 422), with ``loc``, the field's path within the model raising
    it (``"sample_weight"``, ``"eval_set", "inputs"``). pydantic gives a model validator's
    errors the model's own location only; the 422's ``details`` extend it with ``loc``."""

    def __init__(self, message: str, *loc: str | int) -> None:
        super().__init__(message)
        self.loc = list(loc)


class InvalidParameter(InvalidRequest):
    """A model parameter (``params``) okcore refuses: the 422 of okcore's
    InvalidParameterError, with the field."""

    code = "invalid_parameter"


class Unauthorized(ServiceError):
    status = 401
    code = "unauthorized"
    headers = {"WWW-Authenticate": "Bearer"}


class NotFound(ServiceError):
    status = 404
    code = "not_found"


class UnknownModel(NotFound):
    """No model has this (well-formed) id; ``model_id`` lets the app say what the id is."""

    def __init__(self, model_id: str) -> None:
        super().__init__(f"unknown model '{model_id}'")
        self.model_id = model_id


class UnknownJob(NotFound):
    """No job has this (well-formed) id; ``job_id`` lets the app say what the id is."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f"unknown job '{job_id}'")
        self.job_id = job_id


class NotReady(ServiceError):
    """The model exists but cannot answer yet (training) or ever (failed)."""

    status = 409
    code = "model_not_ready"


class TooLarge(ServiceError):
    """The request body is over its cap; the rest of it is not read, so the connection
    is closed after the answer."""

    status = 413
    code = "request_too_large"
    headers = {"connection": "close"}


class BodyTimeout(ServiceError):
    """The client stopped sending its request body; the connection is closed."""

    status = 408
    code = "request_timeout"
    headers = {"connection": "close"}


class WorkTooLarge(ServiceError):
    """The training job asked for would need more memory, time or size than the limits
    allow; the answer names the estimate and the limit."""

    status = 422
    code = "job_too_large"


class UnsupportedMediaType(ServiceError):
    status = 415
    code = "unsupported_media_type"


class Busy(ServiceError):
    status = 429
    code = "too_many_jobs"


class StorageFull(ServiceError):
    """The model store's disk is full (ENOSPC / EDQUOT); nothing half-written is kept."""

    status = 507
    code = "insufficient_storage"


class ShuttingDown(ServiceError):
    """The server is stopping (SIGTERM, Ctrl-C): the job a request waited for was stopped."""

    status = 503
    code = "shutting_down"


class StoreCorrupted(ServiceError):
    """A stored model cannot be read back: a server-side fault, not the client's."""

    status = 500
    code = "model_corrupted"


class RecordInvalid(ServiceError):
    """A stored record fails validation: the model is quarantined (listed as "invalid",
    never loaded) until it is deleted or imported again."""

    status = 409
    code = "model_invalid"


class JobRecordInvalid(RecordInvalid):
    """A stored job record fails validation: the job is quarantined (listed with the state
    "invalid", never run or resumed) until DELETE /jobs/{id} removes its record.
    ``model_id``: the model the record names, when it names one."""

    code = "job_invalid"

    def __init__(
        self,
        message: str,
        *,
        details: list[dict[str, Any]] | None = None,
        model_id: str | None = None,
    ) -> None:
        super().__init__(message, details=details)
        self.model_id = model_id


def error_body(
    status: int, code: str, message: str, details: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The one JSON error shape of the service."""
    return {"error": {"status": status, "code": code, "message": message, "details": details or []}}
