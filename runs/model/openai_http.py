"""The OpenAI chat-completions wire format spoken directly over HTTP, for self-hosted model servers.

A model served by vLLM, Ollama, llama.cpp or SGLang at an ``api_base`` speaks the OpenAI
chat-completions format, and for such a server litellm adds nothing to the request or the
reply but costs several milliseconds of processor time a call (its logging, cost lookup and
response objects). With dozens of episodes in one process against a fast local server that
time, not the model, bounds the run; so for these servers (``runs.model.routing.choose_transport``)
the request goes out as litellm would send it, over a keep-alive connection of the calling
thread's own (the standard library's ``http.client``: opening one costs microseconds, where
an ``httpx`` client costs milliseconds and a client shared by many threads scans its whole
connection pool at every request).

``complete(request)`` takes the request ``runs.model.agent.ModelAgent`` builds for litellm and
returns the reply as parsed JSON. Failures raise exceptions named as litellm's are, with the
HTTP status in ``status_code``; ``classify(exc)`` sorts them for the one retry policy
(``runs.model.retry``) as litellm's are sorted.
"""
from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
from functools import cache
from urllib.parse import urlsplit

from runs.model.retry import FATAL, TRANSIENT, status_kind

# Keys of the litellm request that steer the call rather than go into the body.
CALL_KEYS = frozenset({"model", "api_base", "api_key", "timeout", "num_retries", "max_retries", "drop_params"})
PROVIDER_PREFIXES = ("openai/", "hosted_vllm/")
DEFAULT_TIMEOUT_SEC = 600.0  # a model call's timeout when the run sets none (timeout_sec), on either transport


class ProviderHTTPError(Exception):
    """The server answered with an HTTP error status."""

    def __init__(self, message: str, *, status_code: int):
        super().__init__(message)
        self.status_code = status_code


class BadRequestError(ProviderHTTPError):
    """HTTP 400 (a context-length error among them)."""


class AuthenticationError(ProviderHTTPError):
    """HTTP 401 or 403."""


class RateLimitError(ProviderHTTPError):
    """HTTP 429."""


class InternalServerError(ProviderHTTPError):
    """HTTP 5xx."""


class APIConnectionError(Exception):
    """No answer could be read: the connection failed, or the body was empty or not a JSON object."""


class Timeout(Exception):
    """No answer within the request's timeout."""


_local = threading.local()


@cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context (with the system's certificates) for every connection: loading them takes milliseconds."""
    return ssl.create_default_context()


def _connection(scheme: str, host: str, port: int | None, timeout: float) -> http.client.HTTPConnection:
    """This thread's keep-alive connection to ``host``, opened on first use."""
    connections = getattr(_local, "connections", None)
    if connections is None:
        connections = _local.connections = {}
    key = (scheme, host, port, timeout)
    connection = connections.get(key)
    if connection is None:
        if scheme == "https":
            connection = http.client.HTTPSConnection(host, port, timeout=timeout, context=_tls_context())
        else:
            connection = http.client.HTTPConnection(host, port, timeout=timeout)
        connections[key] = connection
    return connection


def close_connections() -> None:
    """Close this thread's connections (a thread that ends should: a dead thread's are closed only
    when the garbage collector gets to them, by whichever thread is then running)."""
    for connection in getattr(_local, "connections", {}).values():
        connection.close()
    _local.connections = {}


def model_name(model: str) -> str:
    """The model name the server knows: the litellm model string without its provider prefix."""
    for prefix in PROVIDER_PREFIXES:
        if model.startswith(prefix):
            return model[len(prefix) :]
    return model


def _error_message(body: bytes, reason: str) -> str:
    try:
        parsed = json.loads(body)
    except ValueError:
        return body[:500].decode(errors="replace") or reason
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return json.dumps(parsed)[:500]


def _raise_for_status(status: int, body: bytes, reason: str, location: str | None = None) -> None:
    if status < 300:
        return
    if status < 400:  # the OpenAI format has no redirects: the API base is not the server's
        where = f" to {location}" if location else ""
        raise ProviderHTTPError(f"Error code: {status} - the server redirects{where}; "
                                "give the URL it names as the API base", status_code=status)  # fmt: skip
    message = f"Error code: {status} - {_error_message(body, reason)}"
    if status == 408:
        raise Timeout(f"Request timed out (the server answered {status} {reason})")
    if status == 400:
        raise BadRequestError(message, status_code=status)
    if status in (401, 403):
        raise AuthenticationError(message, status_code=status)
    if status == 429:
        raise RateLimitError(message, status_code=status)
    if status >= 500:
        raise InternalServerError(message, status_code=status)
    raise ProviderHTTPError(message, status_code=status)


class _StaleConnection(Exception):
    """A kept-alive connection that the server had closed failed before any answer was read."""


def _send(connection: http.client.HTTPConnection, path: str, payload: bytes, headers: dict, timeout: float):
    reused = connection.sock is not None
    try:
        connection.request("POST", path, body=payload, headers=headers)
        response = connection.getresponse()
        body = response.read()
    except (TimeoutError, socket.timeout) as exc:
        connection.close()
        raise Timeout(f"Request timed out after {timeout:g} s") from exc
    except (http.client.HTTPException, OSError) as exc:
        connection.close()
        if reused and isinstance(exc, (http.client.RemoteDisconnected, ConnectionError)):
            raise _StaleConnection from exc
        raise APIConnectionError(f"Connection error: {type(exc).__name__}: {exc}") from exc
    except BaseException:  # interrupted half-way: the connection is in no state to send the next request
        connection.close()
        raise
    if response.will_close:
        connection.close()
    return response.status, body, response.reason, response.getheader("Location")


def api_base_problem(url: str) -> str | None:
    """Why ``url`` cannot be an API base of the direct transport, or None when it can."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"The API base must be an http(s) URL, not {url!r}."
    try:
        parts.port
    except ValueError:
        return f"The API base has an invalid port: {url!r}."
    return None


def _post(url: str, payload: bytes, headers: dict, timeout: float) -> tuple[int, bytes, str, str | None]:
    """POST ``payload`` on this thread's connection to the server; return the status, body, reason phrase
    and ``Location`` header.

    When the server has closed a kept-alive connection in the meantime, the request is sent
    once more on a new one.
    """
    problem = api_base_problem(url)
    if problem:
        raise APIConnectionError(problem)
    parts = urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    port = parts.port or (443 if parts.scheme == "https" else 80)  # http.client misreads "::1" alone
    connection = _connection(parts.scheme, parts.hostname, port, timeout)
    try:
        return _send(connection, path, payload, headers, timeout)
    except _StaleConnection:
        return _send(connection, path, payload, headers, timeout)  # closed above: this opens a new one


def complete(request: dict) -> dict:
    """Send one chat-completions request; return the reply's JSON object.

    Parameters
    ----------
    request : dict
        The litellm request: ``model`` (``openai/<name>`` or ``hosted_vllm/<name>``),
        ``api_base``, ``api_key`` (None sends no key), ``timeout`` in seconds, and the body:
        ``messages``, decoding settings, ``tools`` and ``tool_choice``.
    """
    body = {key: value for key, value in request.items() if key not in CALL_KEYS}
    body["model"] = model_name(request["model"])
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if request.get("api_key"):
        headers["Authorization"] = f"Bearer {request['api_key']}"
    url = request["api_base"].rstrip("/") + "/chat/completions"
    timeout = float(request.get("timeout") or DEFAULT_TIMEOUT_SEC)
    status, content, reason, location = _post(url, json.dumps(body).encode(), headers, timeout)
    _raise_for_status(status, content, reason, location)
    try:
        reply = json.loads(content)
    except ValueError as exc:
        raise APIConnectionError(f"The server's reply is not JSON: {content[:200]!r}") from exc
    if not isinstance(reply, dict):
        raise APIConnectionError(f"The server's reply is not a JSON object: {content[:200]!r}")
    return reply


def classify(exc: Exception) -> str:
    """``CONTEXT``, ``TRANSIENT`` or ``FATAL`` (``runs.model.retry``) for an error ``complete`` raised."""
    kind = status_kind(exc)
    if kind is None and isinstance(exc, (APIConnectionError, Timeout)):
        return TRANSIENT
    return kind or FATAL
