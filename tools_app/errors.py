"""Errors a tool reports to the agent instead of a result.

A tool raises :class:`ToolError`; :func:`tools_app.registry.call_tool` turns it into the
official error object ``{"record_id", "error"}`` plus our ``error_code`` and any extra
fields (the budget numbers, for instance). Any other exception is a bug.
"""
from enum import StrEnum


class ErrorCode(StrEnum):
    """Why a request was refused. Each code tells the agent what to change."""

    UNKNOWN_RECORD = "unknown_record"
    """The record id is not this episode's recording (or is a path), or it cannot be read."""
    UNKNOWN_CHANNEL = "unknown_channel"
    """None of the requested channels exists in the recording."""
    UNKNOWN_FEATURE = "unknown_feature"
    """None of the requested feature names is known."""
    OUT_OF_RANGE = "out_of_range"
    """The time window lies (partly) outside the recording and too little of it is left."""
    INVALID_ARGUMENT = "invalid_argument"
    """A missing, mistyped or non-finite argument, an inverted or too-short window, ..."""
    OUTPUT_TOO_LARGE = "output_too_large"
    """The result would exceed the output budget; nothing was computed."""
    TIMEOUT = "timeout"
    """The call outlasted the deadline of the server that made it (a web request's) and was stopped."""
    INTERNAL_ERROR = "internal_error"
    """A bug in the tool; the request may be fine. Never used for a bad request."""


class ToolError(Exception):
    """A request the tool cannot serve, with the message the agent will read.

    Parameters
    ----------
    code : ErrorCode
    message : str
        What went wrong and how to fix the call. Must never contain a file path.
    **extra
        JSON-serialisable fields added to the error object after ``error_code``.
    """

    def __init__(self, code, message, **extra):
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.extra = extra

    def to_result(self, record_id):
        """Return the error object the agent sees."""
        return {"record_id": record_id, "error": self.message, "error_code": self.code.value, **self.extra}
