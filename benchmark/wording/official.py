"""The official prompt set: every text the official runner sends, produced by the official package.

The package ``eeg_agent_bench`` (528why/EEGAgentBenchmark at the pinned commit, the ``official``
extra) is imported the first time this prompt set is used. Nothing of its wording is copied here;
each text comes from the place the official runner takes it from:

- opening messages: the task's own ``build_messages(scenario, tool_specs)``
  (``tasks.registry.get_task_bundle``), on the instance's scenario line with the episode's record
  id in place of the release's;
- tool specs: the package's ten tool classes (``tools.implementations.ALL_TOOLS``), listed as
  ``tools.registry.ToolRegistry.list_for_scenario`` lists them (the scenario's allowed order);
  the text tool reference of the system prompt is built from these by the task itself;
- the ``submit_final_answer`` tool: ``agents.adapters.openai_compatible.OpenAICompatibleAdapter``;
- nudges: ``runners.run_scenario``'s ``_repair_nudge`` and its empty-turn and tool-budget texts;
  the two not-executed stubs are string literals inside ``run_scenario``, read from its source;
- tool results: ``types.Observation.to_message`` (text protocol) and
  ``runners.run_scenario._native_tool_messages`` (native), of the object the official tool would
  have returned (:func:`tools_app.views.model_view`); where our tool words a result in its own way
  (the not-applicable reason of ``compute_asymmetry``) the official sentence, a literal in that
  tool's source, takes its place and the ``_meta`` sizes are measured again;
- the memory acknowledgement: ``envs.tool_env.ToolEnvironment.update_memory``.

``tests/benchmark/test_wording.py`` pins each of these places, with a stand-in package and, where
it is installed, with the real one.
"""
from __future__ import annotations

import ast
import copy
import importlib
import inspect
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmark.wording import OFFICIAL, OFFICIAL_PACKAGE, Wording

# The official runner's stub for a native call made after the episode's tool calls ran out says
# the total budget is exhausted; the other one answers the calls beyond the per-turn limit.
_STUB_MARK = "[Tool not executed:"
_TOTAL_BUDGET_WORD = "total"

_loaded: tuple[Any, OfficialWording] | None = None  # (the package module it was read from, the wording)
_lock = threading.Lock()


class OfficialPackageError(RuntimeError):
    """The installed official package does not have what this prompt set reads from it."""


@dataclass(frozen=True)
class _Texts:
    """What is read from the package once: the fixed texts and the callables that make the rest."""

    modules: Any
    empty_answer_nudge: str
    tool_budget_nudge: str
    per_turn_stub: str
    budget_stub: str
    asymmetry_reason: str


class OfficialWording(Wording):
    name = OFFICIAL

    def __init__(self, texts: _Texts):
        self._texts = texts
        modules = texts.modules
        tools = [tool_class() for tool_class in modules.implementations.ALL_TOOLS]
        registry = modules.registry.ToolRegistry()
        for tool in tools:
            registry.register(tool)
        self._registry = registry

    @classmethod
    def load(cls) -> OfficialWording:
        """The prompt set, read from the installed package once (again only if another package is imported)."""
        global _loaded
        with _lock:
            package = importlib.import_module(OFFICIAL_PACKAGE)
            if _loaded is None or _loaded[0] is not package:
                _loaded = (package, cls(_read_package()))
            return _loaded[1]

    # the opening

    def scenario(self, instance, record_id: str):
        """The official ``Scenario`` of ``instance``, with the episode's ``record_id``."""
        return self._texts.modules.types.Scenario.from_dict(_scenario_dict(instance, record_id))

    def tool_specs(self, instance) -> list[dict]:
        return self._registry.list_for_scenario(self.scenario(instance, instance.record_id))

    def opening(self, instance, *, record_id: str, tool_specs: Sequence[Mapping[str, Any]]) -> list[dict]:
        task = self._texts.modules.task_registry.get_task_bundle(instance.task.code).task
        messages = task.build_messages(self.scenario(instance, record_id), [dict(spec) for spec in tool_specs])
        return [{"role": message["role"], "content": message["content"]} for message in messages]

    def submit_tool(self, output_schema: dict | None) -> dict:
        return self._texts.modules.adapter.OpenAICompatibleAdapter._build_submit_tool(output_schema)

    # nudges and stubs

    def repair_nudge(self, errors: Sequence[str], *, native: bool) -> str:
        return self._texts.modules.runner._repair_nudge(native, list(errors))

    def invalid_action_nudge(self, *, native: bool) -> str:
        return self._texts.modules.runner._repair_nudge(native)

    def empty_answer_nudge(self) -> str:
        return self._texts.empty_answer_nudge

    def tool_budget_nudge(self) -> str:
        return self._texts.tool_budget_nudge

    def per_turn_stub(self) -> str:
        return self._texts.per_turn_stub

    def budget_stub(self) -> str:
        return self._texts.budget_stub

    # results

    def tool_result(self, tool_name: str, content: Any, error: str, *, native: bool) -> str:
        from tools_app.views import model_view

        modules = self._texts.modules
        observation = modules.types.Observation(
            status="ok", content=self._official_content(tool_name, model_view(tool_name, content)),
            tool_call_id="call", error=error or None,
        )  # fmt: skip
        if native:
            return modules.runner._native_tool_messages(observation)[0]["content"]
        return observation.to_message()["content"]

    def memory_acknowledgement(self, memory: Any) -> str:
        modules = self._texts.modules
        environment = modules.tool_env.ToolEnvironment(self._registry)
        action = modules.types.AgentAction(action_type=modules.types.ActionType.MEMORY_UPDATE, memory_content=memory)
        return environment.update_memory(action).to_message()["content"]

    def _official_content(self, tool_name: str, content: Any) -> Any:
        """``content`` with the official wording where our tool words its result differently."""
        if tool_name == "compute_asymmetry" and isinstance(content, dict) and content.get("applicable") is False:
            from tools_app.budget import attach_meta

            body = {key: value for key, value in content.items() if key != "_meta"}
            if "reason" in body:
                body["reason"] = self._texts.asymmetry_reason
            meta = content.get("_meta") or {}
            return attach_meta(
                body, n_rows=meta.get("n_rows"), truncated=bool(meta.get("truncated")),
                truncated_reason=meta.get("truncated_reason"),
            )  # fmt: skip
        return content


def _scenario_dict(instance, record_id: str) -> dict:
    """The instance's scenario line as the official loader reads it, with the episode's ``record_id``.

    The stored release line keeps the file's key order; an instance made without one (built by
    hand) is described from its fields. The scenario id is replaced too: no official prompt shows
    it, and it names the label.
    """
    text = (instance.release_lines or {}).get("scenario", {}).get("text")
    scenario = json.loads(text) if text else _described(instance, record_id)
    scenario = copy.deepcopy(scenario)
    scenario["scenario_id"] = "scenario"
    records = scenario.get("records") or []
    if records:
        records[0]["record_id"] = record_id
    return scenario


def _described(instance, record_id: str) -> dict:
    code = instance.task.code
    with_tools = code != "T1"
    return {
        "scenario_id": "scenario",
        "task_id": code,
        "task_name": instance.task.name,
        "dataset": "",
        "records": [{"record_id": record_id, "role": "target", "metadata": dict(instance.metadata or {})}]
        if with_tools else [],
        "input": dict(instance.prompt_input or {}),
        "access": {
            "mode": "metadata_with_tools" if with_tools else "metadata_only_without_tools",
            "allowed_tools": list(instance.allowed_tools or ()) if with_tools else [],
            "forward_only": False,
            "max_turns": 1000,
        },
        "expected_output_schema": dict(instance.expected_output_schema or {}),
    }


@dataclass(frozen=True)
class _Modules:
    types: Any
    task_registry: Any
    registry: Any
    implementations: Any
    adapter: Any
    runner: Any
    tool_env: Any


def _read_package() -> _Texts:
    def module(name: str):
        return importlib.import_module(f"{OFFICIAL_PACKAGE}.{name}")

    modules = _Modules(
        types=module("types"),
        task_registry=module("tasks.registry"),
        registry=module("tools.registry"),
        implementations=module("tools.implementations"),
        adapter=module("agents.adapters.openai_compatible"),
        runner=module("runners.run_scenario"),
        tool_env=module("envs.tool_env"),
    )
    stubs = _string_literals(modules.runner.run_scenario, lambda text: text.startswith(_STUB_MARK))
    budget = [text for text in stubs if _TOTAL_BUDGET_WORD in text]
    per_turn = [text for text in stubs if _TOTAL_BUDGET_WORD not in text]
    if len(budget) != 1 or len(per_turn) != 1:
        raise OfficialPackageError(f"run_scenario has not the two not-executed stubs expected: {stubs}")
    asymmetry = module("tools.implementations.compute_asymmetry")
    reasons = _dict_values(asymmetry, "reason")
    if len(reasons) != 1:
        raise OfficialPackageError(f"compute_asymmetry has not one not-applicable reason: {reasons}")
    return _Texts(
        modules=modules,
        empty_answer_nudge=modules.runner._EMPTY_ANSWER_NUDGE,
        tool_budget_nudge=modules.runner._TOOL_BUDGET_NUDGE,
        per_turn_stub=per_turn[0],
        budget_stub=budget[0],
        asymmetry_reason=reasons[0],
    )


def _string_literals(function, keep) -> list[str]:
    """The distinct string constants in ``function``'s source that ``keep`` accepts, in order."""
    found: list[str] = []
    for node in ast.walk(ast.parse(inspect.getsource(function).lstrip())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and keep(node.value):
            if node.value not in found:
                found.append(node.value)
    return found


def _dict_values(module, key: str) -> list[str]:
    """The distinct constant strings a dict literal in ``module`` gives for ``key``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if not isinstance(node, ast.Dict):
            continue
        for name, value in zip(node.keys, node.values):
            if isinstance(name, ast.Constant) and name.value == key:
                if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value not in found:
                    found.append(value.value)
    return found
