"""What of an error anyone but staff may read: its type and message, never a traceback or a path.

A traceback stored in an error step quotes the server's files; an exception's message can quote
the path of a recording, which names its class. Pages, the API and the environment API show
others ``public_error`` of it.
"""
import re

# An absolute file path (POSIX or Windows), as a traceback or an exception message may quote it.
_PATH = re.compile(r"(?:[A-Za-z]:\\|/)(?:[^\s'\"/\\:]+[/\\])+[^\s'\",)]*")
PUBLIC_ERROR_CHARS = 300


def public_error(text: str) -> str:
    """An error as anyone but staff may read it: its type and message on one line, without a path.

    A traceback gives its last line (``Type: message``); any file path in it becomes ``<path>``.
    """
    lines = [line.strip() for line in (text or "").strip().splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1] if lines[0].startswith("Traceback (most recent call last)") else lines[0]
    line = _PATH.sub("<path>", line)
    return line if len(line) <= PUBLIC_ERROR_CHARS else line[: PUBLIC_ERROR_CHARS - 1] + "…"
