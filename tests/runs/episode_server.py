"""A fake LLM that plays whole T2 episodes by itself, for runs with many episodes at once.

``FakeLLM`` answers from a script, in the order requests arrive, which cannot drive episodes
that interleave. ``EpisodeLLM`` reads each request instead: while the conversation holds
fewer than ``tool_calls`` tool results it calls the next of ``tools`` (by default
``get_recording_info``, in turn) on the record named in the prompt, then it answers with the first class the prompt's output schema lists (T2–T4);
every reply comes after ``delay_sec``.
``serve_in_subprocess`` runs it in a process of its own, so that the server does not share
the interpreter (and its GIL) with the episodes it answers.
"""
import gc
import json
import multiprocessing
import re
from contextlib import contextmanager

from runs.protocol import TOOL_RESULT_PREFIX
from tests.runs.fake_llm import FakeLLM, text

RECORD_ID = re.compile(r"Record ID\*\*: `([^`]+)`")
FIRST_CLASS = re.compile(r'"classification": "([^"|]+)')


class EpisodeLLM(FakeLLM):
    def __init__(self, *, tool_calls: int = 1, delay_sec: float = 0.0, tools: tuple[str, ...] = ("get_recording_info",)):
        super().__init__()
        self.tool_calls = tool_calls
        self.delay_sec = delay_sec
        self.tools = tools

    def _next_reply(self, request: dict, headers: dict) -> dict:
        messages = request.get("messages") or []
        with self._lock:
            self.requests.append(request)
            self.headers.append(headers)
        results = sum(
            message.get("role") == "user" and str(message.get("content", "")).startswith(TOOL_RESULT_PREFIX)
            for message in messages
        )
        prompt = " ".join(str(message.get("content", "")) for message in messages[:2])
        if results < self.tool_calls:
            match = RECORD_ID.search(prompt)
            arguments = {"record_id": match.group(1) if match else "unknown"}
            action = {"action": "tool_call", "tool_name": self.tools[results % len(self.tools)], "arguments": arguments}
        else:
            match = FIRST_CLASS.search(str(messages[1].get("content", "")) if len(messages) > 1 else "")
            label = match.group(1) if match else "clean"
            action = {"action": "final_answer", "classification": label, "findings": ["nothing unusual"]}
        reply = text(json.dumps(action))
        return {**reply, "delay": self.delay_sec} if self.delay_sec else reply


def _serve(connection, tool_calls: int, delay_sec: float) -> None:
    # The forked child inherits its parent's heap (Django, litellm: half a million objects) that it
    # never frees; out of the collector's sight, a full collection no longer stalls the server.
    gc.freeze()
    server = EpisodeLLM(tool_calls=tool_calls, delay_sec=delay_sec).start()
    connection.send(server.api_base)
    connection.recv()  # until the parent says stop
    server.stop()


@contextmanager
def serve_in_subprocess(*, tool_calls: int = 1, delay_sec: float = 0.0):
    """An ``EpisodeLLM`` in a child process; yields its ``api_base``."""
    parent, child = multiprocessing.get_context("fork").Pipe()
    process = multiprocessing.get_context("fork").Process(
        target=_serve, args=(child, tool_calls, delay_sec), daemon=True
    )
    process.start()
    try:
        yield parent.recv()
    finally:
        parent.send("stop")
        process.join(timeout=5)
        if process.is_alive():
            process.kill()
