"""API errors raised by the models and rendered by each service in its own body shape.

Models raise these; they never build HTTP bodies. Each service's ``responses`` module renders
the error the way that service does (Neutron: ``{"NeutronError": {...}}``, Octavia:
``{"faultcode", "faultstring", "debuginfo"}``, Keystone: ``{"error": {...}}``). ``kind`` carries
the Neutron exception type name (``NetworkNotFound``, ``OverQuota``...) where one exists.
"""

from __future__ import annotations


class ApiError(Exception):
    """An error with an HTTP status, a human message and an optional machine kind."""

    status = 500
    default_kind = "InternalServerError"

    def __init__(self, message: str, *, kind: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind or self.default_kind


class BadRequest(ApiError):  # noqa: N818 (named after the HTTP status, like webob)
    status = 400
    default_kind = "BadRequest"


class Unauthorized(ApiError):  # noqa: N818 (named after the HTTP status, like webob)
    status = 401
    default_kind = "Unauthorized"


class Forbidden(ApiError):  # noqa: N818 (named after the HTTP status, like webob)
    status = 403
    default_kind = "Forbidden"


class NotFound(ApiError):  # noqa: N818 (named after the HTTP status, like webob)
    status = 404
    default_kind = "NotFound"


class MethodNotAllowed(ApiError):  # noqa: N818 (named after the HTTP status, like webob)
    status = 405
    default_kind = "HTTPMethodNotAllowed"


class Conflict(ApiError):  # noqa: N818 (named after the HTTP status, like webob)
    status = 409
    default_kind = "Conflict"


class Unsupported(ApiError):  # noqa: N818 (named after what it says, like the others)
    """501: an option or action the provider driver cannot do (Octavia wraps the driver's
    ``UnsupportedOptionError`` as ``ProviderUnsupportedOptionError``, status 501)."""

    status = 501
    default_kind = "ProviderUnsupportedOptionError"


class InjectedError(ApiError):
    """An error produced by the fault injector, with the status the fault rule asked for."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message, kind="InjectedFault")
        self.status = status
