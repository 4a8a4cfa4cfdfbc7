"""Errors a client sees, in OpenAI's shape: {"error": {message, type, param, code}}."""

from __future__ import annotations


class ApiError(Exception):
    """A request the server refuses, with its HTTP status and OpenAI error fields."""

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        code: str | None = None,
        kind: str = "invalid_request_error",
        headers: dict | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code
        self.kind, self.headers = kind, headers or {}

    def body(self) -> dict:
        """The JSON body OpenAI's clients parse."""
        return error_body(self.message, self.kind, self.param, self.code)


def error_body(message: str, kind: str, param: str | None = None, code: str | None = None):
    """{"error": {...}} as OpenAI sends it."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}
