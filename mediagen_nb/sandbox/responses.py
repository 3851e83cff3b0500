"""The service's answers: the ``success``/``data`` envelope, and errors in the spec's shape.

An error is a JSON object ``{statusCode, message, error}``, except 429, whose body is a plain JSON string.
"""

from typing import Any

from starlette.responses import JSONResponse

from mediagen_nb.protocol import messages


class ServiceError(Exception):
    """A refusal with the spec's status and message; rendered by :func:`error_response`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def ok(data: Any, status: int = 200) -> JSONResponse:
    """The ``success``/``data`` envelope."""
    return JSONResponse({"success": True, "data": data}, status_code=status)


def error_response(status: int, message: str) -> JSONResponse:
    """An error body as the service writes it."""
    if status == 429:
        return JSONResponse(message, status_code=429)
    body = {"statusCode": status, "message": message, "error": messages.STATUS_NAMES.get(status, "Error")}
    return JSONResponse(body, status_code=status)


def bad_request(message: str) -> ServiceError:
    return ServiceError(400, message)


def not_found(message: str) -> ServiceError:
    return ServiceError(404, message)


def too_many(message: str) -> ServiceError:
    return ServiceError(429, message)
