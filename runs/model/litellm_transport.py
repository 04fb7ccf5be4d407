"""Calling a model through litellm (every hosted provider), sorting its errors, and loading it ahead.

``complete(request)`` sends the request ``runs.model.agent.ModelAgent`` builds, with litellm's
own retries switched off; ``classify(exc)`` sorts what it raises for the one retry policy
(``runs.model.retry``). ``preload_litellm()`` loads litellm and what its first call builds in a
process that will fork workers (``manage.py qcluster``), so that they share it; ``warm_up()`` builds
what each process builds for itself on its first call, in a worker that has just started.
"""
from __future__ import annotations

import json
import re
from typing import Any

from runs.model.retry import CONTEXT, FATAL, TRANSIENT, status_kind

# How litellm and the provider SDKs word a call made without a key, or with one the provider refused,
# whatever error and status they give it: the OpenAI SDK's "Missing credentials. Please pass an
# `api_key` ... or set the `OPENAI_API_KEY` ... environment variable" comes as an InternalServerError
# (HTTP 500), litellm's "Missing Gemini API key" as an APIConnectionError (HTTP 500). No retry can
# supply a key, so these are fatal (a 500 was retried five times, 62 s of backoff, for each episode).
KEY_REFUSED = re.compile(
    r"missing credentials|missing (?:\w+ )?api[ _-]?key|api_key client option must be set|no key is set"
    r"|(?:invalid|incorrect) api[ _-]?key|api[ _-]?key not valid",
    re.IGNORECASE,
)


def complete(request: dict) -> Any:
    """litellm's reply to ``request`` (a chat completion), or what litellm raises."""
    import litellm

    litellm.suppress_debug_info = True
    return litellm.completion(**request)


def classify(exc: Exception) -> str:
    """``CONTEXT``, ``TRANSIENT`` or ``FATAL`` for an error litellm raised; a missing or refused key is ``FATAL``."""
    import litellm

    if isinstance(exc, litellm.AuthenticationError) or KEY_REFUSED.search(str(exc)):
        return FATAL
    if isinstance(exc, litellm.ContextWindowExceededError):
        return CONTEXT
    kind = status_kind(exc)
    transient = (
        litellm.RateLimitError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
        litellm.APIConnectionError,
        litellm.Timeout,
    )
    if kind is None and isinstance(exc, transient):
        return TRANSIENT
    return kind or FATAL


# ── loading litellm before the workers fork ──────────────────────────────────────────────────

# The warm-up calls name a model litellm has no price for and one it prices (as it prices every
# hosted provider's): a priced model's call loads the provider configurations and cost tables too.
WARM_UP_MODELS = ("openai/warm-up", "openai/gpt-4o-mini")


def preload_litellm() -> None:
    """Import litellm and every module its first completion loads, without calling a model here.

    A process about to fork workers (``manage.py qcluster``) calls this so that the workers
    share those modules instead of each paying for them on its first model call (about 0.2 s
    of processor time a process). Which modules a first call loads depends on the litellm
    version, so a throw-away forked child makes one offline call (litellm's mock response), one
    answered by a loopback server of its own, and one refused at once (a closed local port), and
    reports what they imported; this process then imports the same modules. The calls are made
    in the child because litellm starts a logging thread on a completion, and a process with
    threads must not fork.

    The child also reports the pydantic models whose validators those calls built (litellm
    defers building them to their first use: about 50 ms of a worker's first call), and this
    process builds them too, so a worker's first call costs about what its later ones do.
    """
    import importlib
    import multiprocessing
    import sys

    import litellm

    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_first_call_modules, args=(sender,), daemon=True)
    child.start()
    sender.close()
    try:
        names, models = receiver.recv() if receiver.poll(60) else ([], [])
    except EOFError:  # the child died: the workers import the modules and build the models themselves
        names, models = [], []
    child.join(timeout=10)
    if child.is_alive():
        child.kill()
    for name in names:
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:  # a module the child could import only in its state: leave it to the workers
                continue
    for module_name, qualname in models:
        model = sys.modules.get(module_name)
        for part in qualname.split("."):
            model = getattr(model, part, None)
        try:
            model.model_rebuild()
        except Exception:  # a model built only in the child's state: the first call that uses it builds it
            continue
    litellm.suppress_debug_info = True


def _unbuilt_pydantic_models() -> set:
    """Every pydantic model class defined so far whose validator is not built yet."""
    from pydantic import BaseModel

    found, todo = set(), [BaseModel]
    while todo:
        for subclass in todo.pop().__subclasses__():
            if subclass not in found:
                found.add(subclass)
                todo.append(subclass)
    return {model for model in found if not model.__dict__.get("__pydantic_complete__", False)}


def _first_call_modules(sender) -> None:
    import sys

    import litellm

    litellm.suppress_debug_info = True
    before, unbuilt = set(sys.modules), _unbuilt_pydantic_models()
    messages = [{"role": "user", "content": "warm-up"}]
    with _CannedReplies() as api_base:
        for model, call in (
            (WARM_UP_MODELS[0], {"mock_response": "warm-up"}),
            *((model, {"api_base": api_base, "num_retries": 0, "max_retries": 0, "timeout": 5}) for model in WARM_UP_MODELS),
            (WARM_UP_MODELS[0], {"api_base": "http://127.0.0.1:9/v1", "num_retries": 0, "max_retries": 0, "timeout": 5}),
        ):
            try:
                litellm.completion(model=model, messages=messages, api_key="unused", **call)
            except Exception:  # the refused call fails by design; what it loaded on the way is what counts
                pass
    built = [(model.__module__, model.__qualname__) for model in unbuilt
             if model.__dict__.get("__pydantic_complete__", False) and "<locals>" not in model.__qualname__]  # fmt: skip
    sender.send((sorted(set(sys.modules) - before), sorted(built)))
    sender.close()


def warm_up() -> None:
    """Make this process's first litellm calls, answered by a loopback server: what a worker does as it starts.

    A first call builds state each process keeps for itself (an HTTP client, litellm's logging
    thread, caches of the cost lookup and of the provider's headers) and touches, and so copies,
    the memory pages it shares with the process it was forked from: about 30 ms of processor
    time and 5,000 page faults that a worker would otherwise spend in its first episode. A
    process that is about to fork must not call it (the logging thread). Every failure is
    raised, for the caller to log: a worker goes on without the warm-up.
    """
    import litellm

    litellm.suppress_debug_info = True
    messages = [{"role": "user", "content": "warm-up"}]
    with _CannedReplies() as api_base:
        for model in WARM_UP_MODELS:
            litellm.completion(model=model, messages=messages, api_key="unused", api_base=api_base,
                               num_retries=0, max_retries=0, timeout=5)  # fmt: skip


class _CannedReplies:
    """A loopback server of the warm-up child's own answering every chat completion with text, a tool call
    and usage: the path by which a real reply is read (its address is the ``with`` block's value)."""

    REPLY = json.dumps({
        "id": "warm-up", "object": "chat.completion", "created": 0, "model": "warm-up",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "warm-up",
            "tool_calls": [{"id": "call-0", "type": "function", "function": {"name": "warm_up", "arguments": "{}"}}],
        }}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }).encode()  # fmt: skip

    def __enter__(self) -> str:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        reply = self.REPLY

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __exit__(self, *exc_info) -> None:
        self._server.shutdown()
        self._server.server_close()
