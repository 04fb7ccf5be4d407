"""What of an error anyone but staff may read: its type and message, never a traceback or a path.

A traceback stored in an error step quotes the server's files; an exception's message can quote
the path of a recording, which names its class. Pages, the API and the environment API show
others ``public_error`` of it. A model provider's words (the body of an error it answered,
which any server at a run's API base chooses) are shown to nobody but staff: others read the
HTTP status and a reason of the platform's own (``public_provider_failure``).
"""
import re
from http import HTTPStatus

from runs.model.reply import FAILURE_TEXT

# An absolute file path (POSIX or Windows), as a traceback or an exception message may quote it.
_PATH = re.compile(r"(?:[A-Za-z]:\\|/)(?:[^\s'\"/\\:]+[/\\])+[^\s'\",)]*")
PUBLIC_ERROR_CHARS = 300


# How the episode loop records a failed model call before a retry (runs.episode.loop, record_attempts).
_PROVIDER_ATTEMPT = re.compile(r"provider attempt [0-9]+ failed: ")
# Episodes that ended on a failed model call: their error message is the provider's.
PROVIDER_ENDINGS = ("provider_error", "context_exceeded")


def public_provider_failure(text: str) -> str:
    """A failed model call (``runs.model.reply.failure_text``) as anyone but staff may read it.

    The HTTP status the provider answered and a reason of the platform's own, on one line; never
    the provider's words, nor anything of a text not in that shape.
    """
    match = FAILURE_TEXT.match(text or "")
    kind, status = (match["kind"], match["status"]) if match else ("", None)
    if kind == "Timeout":
        reason = "the model's provider did not answer in time"
    elif kind == "APIConnectionError":
        reason = "the model's provider could not be reached, or its reply could not be read"
    elif status:
        reason = f"the model's provider answered HTTP {status}{_phrase(int(status))}"
    else:
        reason = "the model could not be called"
    return f"{reason}; the details are shown to staff only"


def _phrase(status: int) -> str:
    try:
        return f" ({HTTPStatus(status).phrase})"
    except ValueError:  # a status the standard library does not name
        return ""


def public_episode_error(episode) -> str:
    """An episode's error message as anyone but staff may read it (``public_error``, or the provider's failure)."""
    if episode.ended_by in PROVIDER_ENDINGS:
        return "Model call failed: " + public_provider_failure(episode.error_message)
    return public_error(episode.error_message)


def public_error(text: str) -> str:
    """An error as anyone but staff may read it: its type and message on one line, without a path.

    A traceback gives its last line (``Type: message``); any file path in it becomes ``<path>``.
    A failed attempt at a model call gives only ``public_provider_failure`` of it.
    """
    attempt = _PROVIDER_ATTEMPT.match(text or "")
    if attempt:
        return attempt.group() + public_provider_failure(text[attempt.end():])
    lines = [line.strip() for line in (text or "").strip().splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1] if lines[0].startswith("Traceback (most recent call last)") else lines[0]
    line = _PATH.sub("<path>", line)
    return line if len(line) <= PUBLIC_ERROR_CHARS else line[: PUBLIC_ERROR_CHARS - 1] + "…"
