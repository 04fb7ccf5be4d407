"""Seed data of the page tests: a small suite on recordings written to tmp_path, and two finished runs.

``bench`` is a real (not synthetic) suite with one instance per task; every signal task reads a
``.npy`` recording written here (T5's has 12 channels and 60 s at 256 Hz, long enough to be
decimated). Model "Alpha-1" answers every task well, "Beta-2" gets some wrong, leaves T6 without
an answer and fails T4. Each signal episode calls ``compute_windowed_features`` (a real tool
result on the recording) and ``get_channel_list`` before answering.
"""
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from django.utils import timezone

from benchmark.models import Instance, ModelSpec, Release, Suite, Task
from runs import db
from runs.episode.scoring import score_prediction
from runs.models import Episode, Run, Status, Step
from runs.services import append_step, create_run
from tools_app import call_tool

SFREQ = 256.0
RECORDINGS = {
    # task: (relative path, n_channels, seconds, sampling rate)
    "T2": ("data/eegdenoisenet/seg_0001.npy", 1, 2.0, 256.0),
    "T3": ("data/bonn/rec_0001.npy", 1, 23.6, 173.61),
    "T4": ("data/ds004504/rec_0001.npy", 4, 30.0, 250.0),
    "T5": ("data/chbmit/rec_0001.npy", 12, 60.0, 256.0),
    "T6": ("data/sleep-edfx/rec_0001.npy", 2, 120.0, 100.0),
}
REFERENCES = {
    "T1": {"answer": "B"},
    "T2": {"label": "ocular_contaminated", "snr_db": -3.0, "finding_tags": []},
    "T3": {"label": "epileptic", "label_binary": 1, "finding_tags": []},
    "T4": {"label": "AD"},
    "T5": {"label": "seizure", "has_seizure": True, "n_seizures": 1, "seizure_events": [[20.0, 35.0]]},
    "T6": {"label": "sleep_session", "epoch_labels_aasm": ["W", "N1", "N2", "N2"], "n_epochs_total": 4},
}
GOOD_ANSWERS = {
    "T1": {"answer": "B"},
    "T2": {"classification": "ocular_contaminated", "findings": []},
    "T3": {"classification": "epileptic", "findings": []},
    "T4": {"classification": "AD", "findings": []},
    "T5": {"seizure_events": [{"onset_sec": 21.0, "offset_sec": 33.0}]},
    "T6": {
        "hypnogram_rle": [
            {"start_epoch": 0, "end_epoch": 0, "stage": "W"},
            {"start_epoch": 1, "end_epoch": 3, "stage": "N2"},
        ],
        "architecture": {"REM_pct": 0, "N3_pct": 0, "sleep_efficiency": 0.75},
    },
}
WEAK_ANSWERS = {
    "T1": {"answer": "C"},
    "T2": {"classification": "clean", "findings": []},
    "T3": {"classification": "epileptic", "findings": []},
    "T5": {"seizure_events": [[2.0, 8.0], [40.0, 45.0]]},
}
# A failed episode's model call, as runs.model.reply.failure_text records it.
PROVIDER_FAILURE = "ServiceUnavailableError (HTTP 503): the provider's own words"
CHANNELS = {n: [f"EEG{index + 1}" for index in range(n)] if n > 1 else ["EEG"] for n in (1, 2, 4, 12)}


def write_recording(root: Path, relative: str, n_channels: int, seconds: float, sfreq: float) -> None:
    """A mix of a 10 Hz rhythm and noise in µV, one phase per channel, with a spike at a third of the record."""
    times = np.arange(int(seconds * sfreq)) / sfreq
    rng = np.random.default_rng(0)
    data = np.stack([
        30 * np.sin(2 * np.pi * 10 * times + channel) + 5 * rng.standard_normal(times.size)
        for channel in range(n_channels)
    ])
    data[:, times.size // 3] += 200
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, data)


def make_suite(root: Path, *, name: str = "bench", synthetic: bool = False) -> Suite:
    """A suite with one instance per task whose recordings live under ``root``."""
    release = Release.objects.create(name=name, version="1", source=str(root), is_synthetic=synthetic)
    suite = Suite.objects.create(name=name, release=release, description=f"The {name} test suite.")
    for task in Task.objects.order_by("code"):
        fields = {}
        if task.code in RECORDINGS:
            relative, n_channels, seconds, sfreq = RECORDINGS[task.code]
            write_recording(root, relative, n_channels, seconds, sfreq)
            fields = {
                "recording_path": relative,
                "sfreq": sfreq,
                "n_channels": n_channels,
                "duration_sec": seconds,
                "metadata": {"sampling_rate": sfreq, "channel_names": CHANNELS[n_channels], "duration_sec": seconds},
            }
        if task.code == "T5":
            fields["subject"] = "chb17"
        if task.code == "T6":
            fields |= {"subject": "SC4001", "n_epochs": 4}
        Instance.objects.create(
            suite=suite,
            task=task,
            scenario_id=f"c{task.code[1]}_{name}_{'chb17a_03' if task.code == 'T5' else 'rec'}",
            record_id=f"{name}-{task.code.lower()}-9c1e",
            reference=REFERENCES[task.code],
            prompt_input={"options": {"A": "Delta", "B": "Alpha", "C": "Beta", "D": "Gamma"}} if task.code == "T1" else {},
            **fields,
        )
    return suite


def _tool_call(episode: Episode, tool_name: str, arguments: dict, *, turn: int) -> None:
    instance = episode.instance
    append_step(
        episode=episode,
        kind=Step.Kind.AGENT_MESSAGE,
        text=f"I will call {tool_name}.",
        reasoning="The record is long; look at a few channels first.",
        prompt_tokens=900 + 100 * turn,
        completion_tokens=40,
        latency_ms=350.0,
        cost_usd=Decimal("0.001"),
        result={"action": "tool_call", "thought": "", "tool_calls": [
            {"id": f"call_{turn}_0", "name": tool_name, "arguments": "{}"}], "final_answer": None,
            "memory": None, "finish_reason": "stop"},
    )
    content = call_tool(
        Path(instance.suite.release.source) / instance.recording_path,
        tool_name,
        {"record_id": instance.record_id, **arguments},
        record_id=instance.record_id,
        metadata=instance.metadata,
    )
    append_step(
        episode=episode,
        kind=Step.Kind.TOOL_CALL,
        tool_name=tool_name,
        arguments=arguments,
        result={"status": "ok", "content": content, "tool_call_id": f"call_{turn}_0"},
        text=str(content)[:2000],
        latency_ms=12.0,
    )


def play(episode: Episode, answer: dict | None, *, fail: bool = False) -> None:
    """Record a finished episode: prompt, tool calls for signal tasks, the answer (or none), its score."""
    instance = episode.instance
    append_step(
        episode=episode,
        kind=Step.Kind.PROMPT,
        result={"messages": [{"role": "system", "content": "You are an EEG analyst."},
                             {"role": "user", "content": f"Analyse record {instance.record_id}."}],
                "protocol": "text", "tools": None},
    )
    n_calls = 0
    if instance.recording_path:
        _tool_call(episode, "compute_windowed_features",
                   {"channels": CHANNELS[instance.n_channels][:3], "features": ["rms_uv", "alpha_relative"],
                    "window_sec": 2.0, "tmin": 0, "tmax": min(instance.duration_sec, 20.0)}, turn=1)
        _tool_call(episode, "get_channel_list", {}, turn=2)
        n_calls = 2
    if fail:
        append_step(episode=episode, kind=Step.Kind.ERROR, error=f"provider attempt 1 failed: {PROVIDER_FAILURE}")
        Episode.objects.filter(pk=episode.pk).update(
            status=Status.FAILED, ended_by=Episode.EndedBy.PROVIDER_ERROR,
            error_kind=Episode.ErrorKind.INFRASTRUCTURE, error_message=PROVIDER_FAILURE,
            n_turns=n_calls + 1, n_tool_calls=n_calls, finished_at=timezone.now(),
        )
        return
    if answer is None:
        append_step(episode=episode, kind=Step.Kind.ERROR, error="turn limit of 3 reached without a final answer")
        ended_by, prediction = Episode.EndedBy.TURN_LIMIT, {}
    else:
        append_step(episode=episode, kind=Step.Kind.AGENT_MESSAGE, text="Final answer.", prompt_tokens=1500,
                    completion_tokens=60, cost_usd=Decimal("0.002"),
                    result={"action": "final_answer", "thought": "done", "tool_calls": [], "final_answer": answer,
                            "memory": None, "finish_reason": "stop"})
        append_step(episode=episode, kind=Step.Kind.FINAL_ANSWER, text="done", arguments=answer)
        ended_by, prediction = Episode.EndedBy.FINAL_ANSWER, answer
    Episode.objects.filter(pk=episode.pk).update(
        status=Status.COMPLETED,
        ended_by=ended_by,
        final_answer=answer,
        prediction=prediction,
        scores=score_prediction(instance, prediction),
        n_turns=n_calls + 1,
        n_tool_calls=n_calls,
        prompt_tokens=3500,
        completion_tokens=140,
        cost_usd=Decimal("0.004"),
        wall_time_sec=4.2,
        started_at=timezone.now(),
        finished_at=timezone.now(),
    )


def finished_run(
    suite: Suite, model: ModelSpec, answers: dict, *, missing=(), failed=(), later_epochs: Sequence[dict] = (),
    **options,
) -> Run:
    """A run of ``model`` on every task of ``suite``, played and ended.

    ``answers`` by task (GOOD_ANSWERS where absent); ``later_epochs``: the answers of each epoch
    after the first (a run of ``1 + len(later_epochs)`` epochs); ``options``: other ``create_run``
    arguments (``settings``, ``prompt_set``).
    """
    run = create_run(suite=suite, model=model, tasks=list(Task.objects.values_list("code", flat=True)),
                     name=f"{model.name} on {suite.name}", epochs=1 + len(later_epochs), **options)
    for episode in run.episodes.select_related("instance__task", "instance__suite__release"):
        code = episode.instance.task.code
        played = (answers, *later_epochs)[episode.epoch]
        play(episode, None if code in missing else played.get(code, GOOD_ANSWERS[code]), fail=code in failed)
    Run.objects.filter(pk=run.pk).update(status=Status.FAILED if failed else Status.COMPLETED,
                                         started_at=timezone.now(), finished_at=timezone.now())
    run.refresh_from_db()
    db.refresh_totals(run)
    return run


@dataclass
class Bench:
    suite: Suite
    alpha: Run
    beta: Run

    def episode(self, run: Run, task: str) -> Episode:
        return run.episodes.get(instance__task__code=task)

    def windowed_step(self, run: Run, task: str = "T5") -> Step:
        return Step.objects.get(episode=self.episode(run, task), tool_name="compute_windowed_features")


@pytest.fixture
def bench(db, tmp_path) -> Bench:
    """The "bench" suite and two finished runs on it (see the module docstring)."""
    suite = make_suite(tmp_path / "bench")
    alpha_model = ModelSpec.objects.create(
        name="Alpha-1", provider_model="openai/alpha-1", family="Alpha", parameters="70B", parameters_b=70,
        is_open_weight=True, input_price_per_mtok=Decimal("1.0"), output_price_per_mtok=Decimal("4.0"),
    )
    beta_model = ModelSpec.objects.create(
        name="Beta-2", provider_model="openai/beta-2", family="Beta", is_open_weight=False,
        input_price_per_mtok=Decimal("3.0"), output_price_per_mtok=Decimal("12.0"),
    )
    alpha = finished_run(suite, alpha_model, GOOD_ANSWERS)
    beta = finished_run(suite, beta_model, WEAK_ANSWERS, missing=("T6",), failed=("T4",))
    return Bench(suite=suite, alpha=alpha, beta=beta)


@dataclass
class Repeated:
    """The bench board with runs repeated: ``bench.alpha`` and a later run of Alpha-1 at the same
    settings (``latest_alpha``, weaker), Alpha-1 at temperature 0.7 (``warm_alpha``), and Gamma-3,
    a run of three epochs whose T1, T2 and T5 answers differ between epochs (``gamma``)."""

    bench: Bench
    latest_alpha: Run
    warm_alpha: Run
    gamma: Run


@pytest.fixture
def repeated(bench) -> Repeated:
    alpha_model = bench.alpha.model
    latest = finished_run(bench.suite, alpha_model, {**GOOD_ANSWERS, "T1": {"answer": "C"}})
    warm = finished_run(bench.suite, alpha_model, GOOD_ANSWERS,
                        settings={"tool_protocol": "text", "max_tokens": 8192, "temperature": 0.7})
    gamma_model = ModelSpec.objects.create(
        name="Gamma-3-Long-Context-Preview", provider_model="openai/gamma-3", family="Gamma", parameters="8B",
        parameters_b=8, is_open_weight=True, input_price_per_mtok=Decimal("0.2"), output_price_per_mtok=Decimal("0.8"),
    )
    gamma = finished_run(bench.suite, gamma_model, GOOD_ANSWERS, later_epochs=(
        {"T1": {"answer": "C"}, "T5": {"seizure_events": []}},
        {"T2": {"classification": "clean", "findings": []}},
    ))
    return Repeated(bench=bench, latest_alpha=latest, warm_alpha=warm, gamma=gamma)
