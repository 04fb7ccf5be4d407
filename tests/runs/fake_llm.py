"""A scripted OpenAI-compatible chat server on 127.0.0.1, for driving litellm over real HTTP.

Tests start it in a thread, queue the replies it should give, point litellm at
``server.api_base`` with a model string such as ``openai/fake-model``, and afterwards read
``server.requests`` (the JSON bodies it received, in order) and ``server.headers``. Each
queued reply is built by one of the helpers below: a text or native tool-call completion
(with usage, cached and reasoning tokens, and ``reasoning_content``), an HTTP error, a
context-overflow error, an empty ``choices`` list, a non-JSON body, or any of these after
a delay or followed by the server hanging up.
"""
import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer



def usage(prompt=100, completion=20, *, cached=None, cache_write=None, reasoning=None) -> dict:
    """Return an OpenAI-style usage object; the optional parts are omitted when None."""
    body = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    if cached is not None:
        body["prompt_tokens_details"] = {"cached_tokens": cached}
    if cache_write is not None:
        body["cache_creation_input_tokens"] = cache_write
    if reasoning is not None:
        body["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return body


def _completion(message: dict, *, finish_reason: str, usage_body: dict | None) -> dict:
    return {
        "status": 200,
        "body": {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "fake-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": usage_body if usage_body is not None else usage(),
        },
    }


def text(content: str, *, reasoning: str | None = None, usage_body: dict | None = None) -> dict:
    """A completion whose message is ``content``, with optional ``reasoning_content``."""
    message = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return _completion(message, finish_reason="stop", usage_body=usage_body)


def tool_calls(*calls: tuple[str, dict | str], content: str | None = None, usage_body: dict | None = None) -> dict:
    """A completion with native tool calls, each ``(name, arguments)``; ids are ``call_0``, ``call_1``, …

    Arguments given as a string are sent as they are (to exercise malformed JSON).
    """
    message = {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {
                "id": f"call_{index}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
            for index, (name, arguments) in enumerate(calls)
        ],
    }
    return _completion(message, finish_reason="tool_calls", usage_body=usage_body)


def http_error(status: int, message: str = "fake failure") -> dict:
    """An OpenAI-style error response with HTTP ``status``."""
    return {"status": status, "body": {"error": {"message": message, "type": "fake_error", "code": status}}}


def context_overflow(max_context: int = 8192, prompt_tokens: int = 8000, requested: int = 2048) -> dict:
    """A 400 worded like vLLM's context-length error, which names the window and the prompt size."""
    return http_error(
        400,
        f"This model's maximum context length is {max_context} tokens. However, you requested "
        f"{prompt_tokens + requested} tokens ({prompt_tokens} in the messages, {requested} in the "
        "completion). Please reduce the length of the messages or completion.",
    )


def empty_choices(usage_body: dict | None = None) -> dict:
    """HTTP 200 with no choices at all, as some gateways send under load."""
    reply = _completion({}, finish_reason="stop", usage_body=usage_body)
    reply["body"]["choices"] = []
    return reply


def raw(body: bytes, *, status: int = 200, content_type: str = "application/json") -> dict:
    """A reply whose body is sent byte for byte (e.g. empty, or not JSON)."""
    return {"status": status, "raw": body, "content_type": content_type}


def hanging_up(reply: dict) -> dict:
    """``reply``, after which the server closes the connection without saying so (as an idle timeout does)."""
    return {**reply, "hang_up": True}


def delayed(seconds: float, reply: dict) -> dict:
    """``reply``, sent ``seconds`` after the request arrived (for client timeouts, and a model's latency)."""
    return {**reply, "delay": seconds}


class _Server(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: dozens of clients connecting at once would see
    # their connections dropped and retried a second later, which no provider's server does.
    request_queue_size = 256
    daemon_threads = True


class FakeLLM:
    """The server: queue replies with ``add``, then read ``requests``.

    When the queue is empty it answers 400 "script exhausted", which litellm does not
    retry, so an unexpected extra call fails the test visibly instead of hanging it.
    """

    def __init__(self):
        self.replies: deque[dict] = deque()
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def api_base(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def add(self, *replies: dict) -> "FakeLLM":
        with self._lock:
            self.replies.extend(replies)
        return self

    def start(self) -> "FakeLLM":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "FakeLLM":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def _next_reply(self, request: dict, headers: dict) -> dict:
        with self._lock:
            self.requests.append(request)
            self.headers.append(headers)
            if self.replies:
                return self.replies.popleft()
        return http_error(400, "fake server: script exhausted")

    def _handler_class(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as providers' servers do: a client reuses its connection
            disable_nagle_algorithm = True  # else the body waits for the ACK of the headers (40 ms)

            def do_POST(self):
                arrived = time.monotonic()
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                reply = fake._next_reply(request, {name.lower(): value for name, value in self.headers.items()})
                if reply.get("delay"):  # counted from the request's arrival: the server's own work is part of it
                    time.sleep(max(0.0, reply["delay"] - (time.monotonic() - arrived)))
                if "raw" in reply:
                    payload, content_type = reply["raw"], reply["content_type"]
                else:
                    payload, content_type = json.dumps(reply["body"]).encode(), "application/json"
                try:
                    self.send_response(reply["status"])
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a timeout test)
                if reply.get("hang_up"):
                    self.close_connection = True

            def log_message(self, format, *args):
                pass

        return Handler
