"""The official prompt set against the real official package, where it is installed.

Every official scenario we hold renders byte for byte as the official task builds it (but for the
record id); our tool results read on the real Bonn segments exactly as the official tools' do; and
one scripted model gets the same conversation from the official runner (its own CLI) and from ours.
Skipped, with the reason, where the package is absent (``pip install -e '.[official]'``).
"""
import json
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from benchmark.models import Instance
from benchmark.releases import import_release
from benchmark.wording import OFFICIAL, prompt_set
from runs.models import Run
from tests.benchmark.release_dirs import (
    link_bonn,
    lines,
    official_release,
    placeholder_data,
    smoke_release,
    write_lines,
)
from tests.datafiles import BONN, OFFICIAL as UPSTREAM
from tests.runs.fake_llm import FakeLLM, text
from tools_app import call_tool
from tools_app.registry import TOOL_NAMES

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
RECORD = re.compile(r"Record ID\*\*: `([^`]+)`")


def official_builder(package, scenario_line: dict) -> tuple[list[dict], list[dict]]:
    """What the official runner builds for a scenario line: its opening messages and its tool specs."""
    from eeg_agent_bench.tasks.registry import get_task_bundle
    from eeg_agent_bench.tools.implementations import ALL_TOOLS
    from eeg_agent_bench.tools.registry import ToolRegistry
    from eeg_agent_bench.types import Scenario

    registry = ToolRegistry()
    by_name = {tool_class().spec.name: tool_class for tool_class in ALL_TOOLS}
    for name in package.tools.catalog.ALL_ANALYSIS_TOOLS:  # the order of configs/tools.yaml upstream
        registry.register(by_name[name]())
    scenario = Scenario.from_dict(scenario_line)
    specs = registry.list_for_scenario(scenario)
    return get_task_bundle(scenario.task_id).task.build_messages(scenario, specs), specs


def scenario_lines(root: Path) -> dict[str, dict]:
    return {
        json.loads(line)["scenario_id"]: json.loads(line)
        for path in sorted((root / "benchmark" / "scenarios").glob("*.jsonl")) for line in lines(path)
    }


def test_every_official_scenario_renders_as_the_official_builder_renders_it(official_package, tmp_path):
    import eeg_agent_bench.tools.catalog  # noqa: F401  (official_builder reads it)

    release = official_release(tmp_path / "release")
    placeholder_data(release, ["T2", "T3", "T4"])
    smoke = smoke_release(tmp_path / "smoke", ("T5", "T6"))
    placeholder_data(smoke, ["T5", "T6"])
    suites = [import_release(path=release).suite, import_release(path=smoke).suite]
    official = {**scenario_lines(release), **scenario_lines(smoke)}
    wording = prompt_set(OFFICIAL)
    compared = 0
    for suite in suites:
        for instance in Instance.objects.filter(suite=suite).select_related("task"):
            out = StringIO()
            call_command("show_prompt", suite.name, instance.scenario_id, "--prompt-set", "official", "--json",
                         stdout=out)  # fmt: skip
            shown = json.loads(out.getvalue())
            messages, specs = official_builder(official_package, official[instance.scenario_id])
            ours = json.dumps(shown["messages"], ensure_ascii=False)
            if instance.release_record_id:
                assert instance.record_id in ours and instance.release_record_id not in ours
                ours = ours.replace(instance.record_id, instance.release_record_id)
            assert json.loads(ours) == messages, instance.scenario_id
            assert wording.tool_specs(instance) == specs
            compared += 1
    assert compared == 38 + 300 + 188 + 69 + 2 + 1


def official_tool_text(tool, arguments: dict, context: dict) -> str:
    from eeg_agent_bench.types import Observation

    try:
        observation = Observation(status="ok", content=tool.execute(dict(arguments), context))
    except Exception as exc:  # the official environment's wording of a raising tool
        observation = Observation(status="error", error=f"Tool execution failed: {exc}")
    return observation.to_message()["content"]


CALLS = [
    ("get_recording_info", {}), ("get_channel_list", {}), ("compute_noise_metrics", {}),
    ("compute_noise_metrics", {"line_freq": 60}), ("compute_psd", {}), ("compute_psd", {"tmin": 2, "tmax": 12}),
    ("compute_psd", {"method": "multitaper", "fmin": 1, "fmax": 30}), ("compute_band_power", {}),
    ("compute_band_power", {"tmin": 0, "tmax": 8}), ("detect_transients", {}),
    ("detect_transients", {"min_amplitude_uv": 40, "max_candidates_per_channel": 5}),
    ("compute_temporal_features", {}), ("compute_temporal_features", {"tmin": 5, "tmax": 15}),
    ("compute_asymmetry", {}), ("compute_channel_correlation", {}), ("compute_windowed_features", {}),
    ("compute_windowed_features", {"window_sec": 2, "features": ["rms_uv", "alpha_power", "theta_alpha_ratio"]}),
    ("compute_psd", {"channels": ["Cz"]}), ("compute_band_power", {"tmin": 30, "tmax": 40}),
    # Refused for its size: the official text calls the 20-s range the record (23.6 s); we send it as it is.
    ("compute_windowed_features", {"window_sec": 0.05, "tmax": 20}),
]  # fmt: skip


def test_our_tool_results_read_as_the_official_tools_on_the_real_bonn_segments(official_package):
    from eeg_agent_bench.tools.implementations import ALL_TOOLS

    tools = {tool_class().spec.name: tool_class() for tool_class in ALL_TOOLS}
    wording = prompt_set(OFFICIAL)
    segments = sorted(path for path in BONN.glob("*/*") if path.suffix.lower() == ".txt")
    assert len(segments) == 100
    metadata = {"channels": 1, "sampling_rate": 173.61}
    compared = 0
    for path in segments:
        context = {"record_paths": {"EEG_0042": str(path)}, "record_metadata": {"EEG_0042": metadata},
                   "records": ["EEG_0042"]}  # fmt: skip
        for name, arguments in CALLS:
            arguments = {"record_id": "EEG_0042", **arguments}
            ours = call_tool(path, name, dict(arguments), record_id="EEG_0042", metadata=metadata)
            assert wording.tool_result(name, ours, "", native=False) == official_tool_text(
                tools[name], arguments, context
            ), (path.name, name, arguments)
            compared += 1
    assert compared == 100 * len(CALLS)


# ── one scripted model, two runners ──────────────────────────────────────────────────────────

SCRIPT = [
    ("tool", "get_recording_info", {}), ("tool", "compute_psd", {}), ("tool", "compute_band_power", {}),
    ("text", "Let me look at the spectrum first."), ("tool", "detect_transients", {"min_amplitude_uv": 40}),
    ("tool", "compute_temporal_features", {}), ("tool", "compute_asymmetry", {}),
    ("tool", "compute_channel_correlation", {}), ("tool", "compute_windowed_features", {"window_sec": 2}),
    ("tool", "compute_noise_metrics", {}), ("tool", "get_channel_list", {}),
    ("json", {"action": "memory_update", "memory": "alpha at 10 Hz"}),
    ("json", {"action": "final_answer", "classification": "unclear", "findings": []}),
    ("json", {"action": "final_answer", "classification": "normal", "findings": ["alpha rhythm"]}),
]  # fmt: skip


class ScriptedLLM(FakeLLM):
    """Plays ``SCRIPT`` in every conversation, by the number of replies it already holds."""

    def _next_reply(self, request: dict, headers: dict) -> dict:
        messages = request.get("messages") or []
        with self._lock:
            self.requests.append(request)
        turn = sum(message.get("role") == "assistant" for message in messages)
        record_id = RECORD.search(messages[1]["content"]).group(1)
        kind, *rest = SCRIPT[min(turn, len(SCRIPT) - 1)]
        if kind == "tool":
            name, arguments = rest
            action = {"action": "tool_call", "tool_name": name, "arguments": {"record_id": record_id, **arguments}}
            return text(json.dumps(action))
        return text(rest[0] if kind == "text" else json.dumps(rest[0]))


def by_record(requests: list[dict]) -> dict[str, list[dict]]:
    conversations: dict[str, list[dict]] = {}
    for request in requests:
        conversations.setdefault(RECORD.search(request["messages"][1]["content"]).group(1), []).append(request)
    return conversations


def run_official_cli(root: Path, work: Path, api_base: str, scenario_ids: list[str]) -> None:
    """The official runner's own CLI on the scenarios ``scenario_ids`` of the release at ``root``."""
    from eeg_agent_bench.tools.catalog import ALL_ANALYSIS_TOOLS

    for kind in ("scenarios", "runtime", "answer_keys"):
        kept = [line for line in lines(root / "benchmark" / kind / "T3.jsonl")
                if json.loads(line)["scenario_id"] in scenario_ids]  # fmt: skip
        write_lines(work / kind / "T3.jsonl", kept)
    (work / "tools.yaml").write_text("tools:\n" + "".join(f"  - {name}\n" for name in ALL_ANALYSIS_TOOLS))
    (work / "agent.yaml").write_text(
        "agent:\n  name: scripted\n  provider: openai_compatible\n  model: scripted-model\n"
        f"  base_url: {api_base}\n  api_key_env: SCRIPTED_KEY\n  temperature: 0\n  max_tokens: 8192\n"
        "  response_format: text\n  tool_protocol: text\n"
    )
    command = [
        sys.executable, "-c", "from eeg_agent_bench.cli import main; main()", "run",
        "--scenario", str(work / "scenarios/T3.jsonl"), "--answer-key", str(work / "answer_keys/T3.jsonl"),
        "--runtime-manifest", str(work / "runtime/T3.jsonl"), "--data-root", str(root),
        "--agent", str(work / "agent.yaml"), "--tools", str(work / "tools.yaml"), "--output", str(work / "out"),
    ]  # fmt: skip
    finished = subprocess.run(command, cwd=work, env={"SCRIPTED_KEY": "sk-scripted", "PATH": "/usr/bin:/bin"},
                              capture_output=True, text=True, timeout=600)  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-3000:]


def test_a_scripted_model_gets_the_same_conversation_from_both_runners(official_package, tmp_path, monkeypatch):
    root = official_release(tmp_path / "release", ("T3",))
    link_bonn(root)
    suite = import_release(path=root, skip_missing=True).suite
    instances = {instance.release_record_id: instance for instance in suite.instances.all()}
    assert len(instances) == 37  # the official T3 instances whose Bonn segment is in tests/data
    with ScriptedLLM() as server:
        run_official_cli(root, tmp_path / "official", server.api_base,
                         [instance.scenario_id for instance in instances.values()])  # fmt: skip
        theirs = by_record(server.requests)
        server.requests.clear()
        monkeypatch.setenv("SCRIPTED_KEY", "sk-scripted")
        call_command("run_benchmark", "--model", "openai/scripted-model", "--api-base", server.api_base,
                     "--api-key-env", "SCRIPTED_KEY", "--suite", suite.name, "--tasks", "T3", "--sync",
                     "--concurrency", "1", "--prompt-set", "official", "--json", stdout=StringIO())  # fmt: skip
        ours = by_record(server.requests)
    assert len(theirs) == len(ours) == 37
    episodes = {episode.instance.release_record_id: episode.record_id
                for episode in Run.objects.get().episodes.select_related("instance")}  # fmt: skip
    same = total = 0
    for release_id in instances:
        record_id = episodes[release_id]  # the id this episode's agent saw, its own
        official, mine = theirs[release_id], ours[record_id]
        assert len(official) == len(mine) == len(SCRIPT), release_id
        for request, our_request in zip(official, mine):
            total += 1
            ours_as_theirs = json.loads(json.dumps(our_request).replace(record_id, release_id))
            same += ours_as_theirs == request
            assert ours_as_theirs == request, (release_id, len(request["messages"]))
    assert same == total == 37 * len(SCRIPT)


def test_no_official_sentence_is_in_our_files(official_package):
    """Our files paraphrase the official texts; they may not copy any sentence of them."""
    from eeg_agent_bench.runners import run_scenario
    from eeg_agent_bench.tasks import prompt_builder
    from eeg_agent_bench.tools.implementations import ALL_TOOLS

    texts = [tool_class().spec.description for tool_class in ALL_TOOLS]
    texts += [prompt_builder.AGENT_OPERATING_PROTOCOL, run_scenario._TEXT_ACTION_NUDGE,
              run_scenario._EMPTY_ANSWER_NUDGE, run_scenario._TOOL_BUDGET_NUDGE]  # fmt: skip
    for package_file in Path(official_package.__file__).parent.glob("tasks/t*/prompt.py"):
        texts.append(package_file.read_text(encoding="utf-8"))
    sentences = {
        " ".join(sentence.split())
        for chunk in texts for sentence in re.split(r"(?<=[.!?])\s+", chunk)
        if len(sentence.split()) >= 8
    }
    ours = Path(__file__).resolve().parents[2]
    sources = [path for folder in ("benchmark", "runs", "tools_app", "leaderboard", "templates", "docs")
               for path in (ours / folder).rglob("*") if path.suffix in {".py", ".html", ".md"}]  # fmt: skip
    found = []
    for path in sources:
        flat = " ".join(path.read_text(encoding="utf-8").split())
        found += [(path.name, sentence[:60]) for sentence in sentences if sentence in flat]
    assert found == []


def test_every_tool_of_the_package_is_one_of_ours(official_package):
    from eeg_agent_bench.tools.catalog import ALL_ANALYSIS_TOOLS

    assert tuple(ALL_ANALYSIS_TOOLS) == TOOL_NAMES
    assert UPSTREAM.is_dir()
