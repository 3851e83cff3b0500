"""The service's error responses: a JSON object, except 429 which is a plain JSON string."""

from starlette.responses import JSONResponse

from mediagen_nb.protocol import messages


class ServiceError(Exception):
    """A refusal with the spec's status and message; rendered by :func:`error_response`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error_response(status: int, message: str) -> JSONResponse:
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
