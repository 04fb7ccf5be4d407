"""What a model reads during an episode, in one of two prompt sets.

Every text an episode sends a model comes from its run's prompt set, chosen when the run is
created and stored on it (``Run.prompt_set``):

- ``official``: the official package ``eeg_agent_bench`` (528why/EEGAgentBenchmark at commit
  5ac8aba14957c3bd4162118a1f5d3d15568df4cc), installed beside the platform with
  ``pip install -e '.[official]'``, produces every text itself, so the conversation a model has
  is the one the official runner would have with it (:mod:`benchmark.wording.official`). None of
  its texts are copied into this project.
- ``platform``: our own wording (:mod:`benchmark.wording.platform`), saying the same facts as the
  official texts; used when the package is absent.

A prompt set gives the opening ``[system, user]`` messages, the tools' function specs (the native
``tools`` list and the source of the text tool reference), the synthetic ``submit_final_answer``
tool, the repair, empty-turn and tool-budget nudges, the stubs for native calls that are not run,
and a tool result as the text the model reads.
"""
from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from typing import Any

OFFICIAL = "official"
PLATFORM = "platform"
PROMPT_SETS = (OFFICIAL, PLATFORM)
OFFICIAL_PACKAGE = "eeg_agent_bench"
OFFICIAL_COMMIT = "5ac8aba14957c3bd4162118a1f5d3d15568df4cc"
INSTALL_COMMAND = "pip install -e '.[official]'"

# Formats both prompt sets share with the official runner (they are formats, not wording).
TOOL_RESULT_PREFIX = "[Tool Result]\n"
SUBMIT_TOOL_NAME = "submit_final_answer"
MAX_ERRORS_SHOWN = 6  # a repair nudge lists at most this many of the answer's errors


class PromptSetUnavailable(ValueError):
    """The official prompt set was asked for, but the official package is not installed."""


class Wording:
    """The texts of one prompt set. Subclasses give each one."""

    name: str

    def tool_specs(self, instance) -> list[dict]:
        """The function specs of the tools ``instance`` allows, in the order its prompt lists them."""
        raise NotImplementedError

    def opening(self, instance, *, record_id: str, tool_specs: Sequence[Mapping[str, Any]]) -> list[dict]:
        """The ``[system, user]`` messages an episode on ``instance`` opens with, naming its ``record_id``."""
        raise NotImplementedError

    def submit_tool(self, output_schema: dict | None) -> dict:
        """The native protocol's ``submit_final_answer`` function for ``output_schema``."""
        raise NotImplementedError

    def repair_nudge(self, errors: Sequence[str], *, native: bool) -> str:
        """The message after a final answer that fails the output schema (its first six errors)."""
        raise NotImplementedError

    def invalid_action_nudge(self, *, native: bool) -> str:
        """The message after a turn that held no usable action."""
        raise NotImplementedError

    def empty_answer_nudge(self) -> str:
        """The message after an empty native turn."""
        raise NotImplementedError

    def tool_budget_nudge(self) -> str:
        """The message once the episode's tool calls are used up."""
        raise NotImplementedError

    def per_turn_stub(self) -> str:
        """The result of a native call beyond the calls run in one turn."""
        raise NotImplementedError

    def budget_stub(self) -> str:
        """The result of a native call made after the tool calls were used up."""
        raise NotImplementedError

    def tool_result(self, tool_name: str, content: Any, error: str, *, native: bool) -> str:
        """A tool's result as the model reads it (text protocol: with the ``[Tool Result]`` prefix)."""
        raise NotImplementedError

    def memory_acknowledgement(self, memory: Any) -> str:
        """The environment's reply to a memory update, as the model reads it."""
        raise NotImplementedError


def official_available() -> bool:
    """Whether the official package can be imported here."""
    return importlib.util.find_spec(OFFICIAL_PACKAGE) is not None


def default_prompt_set() -> str:
    """``official`` where the official package is installed, else ``platform``."""
    return OFFICIAL if official_available() else PLATFORM


def check_prompt_set(name: str) -> str:
    """Return ``name`` if it names a prompt set usable here; raise ValueError or PromptSetUnavailable."""
    if name not in PROMPT_SETS:
        raise ValueError(f"The prompt set must be one of {', '.join(PROMPT_SETS)}, not {name!r}.")
    if name == OFFICIAL and not official_available():
        raise PromptSetUnavailable(
            f"The official prompt set needs the official package ({OFFICIAL_PACKAGE}, 528why/EEGAgentBenchmark "
            f"at {OFFICIAL_COMMIT[:7]}), which is not installed: run `{INSTALL_COMMAND}` in the platform's checkout."
        )
    return name


def prompt_set(name: str) -> Wording:
    """The wording of the prompt set ``name``.

    Raises
    ------
    ValueError
        For a name that is no prompt set.
    PromptSetUnavailable
        For ``official`` without the official package.
    """
    check_prompt_set(name)
    if name == OFFICIAL:
        from benchmark.wording.official import OfficialWording

        return OfficialWording.load()
    from benchmark.wording.platform import PlatformWording

    return PlatformWording()
