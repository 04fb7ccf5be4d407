"""What an episode opens with: its run's prompt set, the opening messages, the tool specs, and its tools."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmark.wording import Wording, prompt_set
from runs.models import Episode, Run


def episode_tools(episode: Episode, *, call: Callable[..., dict] | None = None) -> Callable[[Any, str, dict], dict]:
    """The platform's tools on ``episode``'s own recording, which answers to the episode's record id only."""
    return record_tools(episode.record_id, call=call)


def record_tools(record_id: str, *, call: Callable[..., dict] | None = None) -> Callable[[Any, str, dict], dict]:
    """The platform's tools on an instance's recording, answering to ``record_id`` only.

    ``call`` makes the calls, with :func:`tools_app.call_tool`'s arguments; by default that
    function, in this process (``tools_app.processes.ToolProcesses.call`` makes them elsewhere).
    """
    if call is None:
        from tools_app import call_tool as call

    def run(instance, tool_name: str, arguments: dict) -> dict:
        path = Path(instance.suite.release.source) / instance.recording_path
        return call(path, tool_name, arguments, record_id=record_id, metadata=instance.metadata)

    return run


def run_wording(run: Run) -> Wording:
    """The prompt set ``run`` was created with (``benchmark.wording``)."""
    return prompt_set(run.prompt_set)


def opening(
    instance,
    wording: Wording,
    *,
    record_id: str,
    tool_specs: Sequence[dict] | None = None,
    build_messages: Callable[..., list[dict]] | None = None,
) -> tuple[list[dict], list[dict]]:
    """The tool specs an episode on ``instance`` offers, and its opening messages with ``record_id``.

    Both are the prompt set's unless given: ``tool_specs`` replaces its specs, and
    ``build_messages(instance, *, tool_specs)`` its messages (tests and benchmarks pass their own).
    """
    specs = wording.tool_specs(instance) if tool_specs is None else list(tool_specs)
    if build_messages is not None:
        return specs, build_messages(instance, tool_specs=specs)
    return specs, wording.opening(instance, record_id=record_id, tool_specs=specs)


def native_tools(instance, tool_specs: Sequence[dict], wording: Wording) -> list[dict]:
    """The ``tools`` list of a native-protocol request: the allowed tools, then ``submit_final_answer``."""
    allowed = set(allowed_tool_names(instance))
    return [
        *(spec for spec in tool_specs if spec_name(spec) in allowed),
        wording.submit_tool(instance.expected_output_schema),
    ]


def first_request(
    instance, wording: Wording, *, native: bool, record_id: str | None = None
) -> tuple[list[dict], list[dict] | None]:
    """The messages and ``tools`` of the first request an episode on ``instance`` sends its model.

    ``record_id`` is the episode's (default: the suite's id of the instance, which no agent sees).
    """
    specs, messages = opening(instance, wording, record_id=record_id or instance.record_id)
    return messages, native_tools(instance, specs, wording) if native else None


def allowed_tool_names(instance) -> tuple[str, ...]:
    """The tools ``instance`` allows: none for T1, else its scenario's list (all ten when it names none)."""
    from benchmark.prompts import OFFICIAL_TOOLS

    if instance.task.code == "T1":
        return ()
    return tuple(instance.allowed_tools or OFFICIAL_TOOLS)


def spec_name(spec: dict) -> str:
    return spec.get("function", spec).get("name", "")
