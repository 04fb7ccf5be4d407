"""Official-size synthetic boards for the leaderboard tests and ``bench/web.py``, built with bulk_create.

``official_suite`` creates a suite with the official task sizes and class balance (1,072 instances:
T2 with 10 epochs per artifact and SNR level, T5 140 seizure-positive and 140 seizure-free records
over 24 subjects, T6 Sleep Cassette and Telemetry nights of 6 to 22 hours), so runs on it can be
official. ``add_run`` adds a run whose agent answers each instance correctly with probability
``skill``, scores every completed episode with the loop's own per-item scorer and stores steps.
"""
from __future__ import annotations

import random
from collections.abc import Iterable
from decimal import Decimal

from django.utils import timezone

from benchmark.models import Instance, ModelSpec, Release, Suite, Task
from benchmark.scoring.classification import REFERENCE_CLASSES
from benchmark.scoring.hypnogram import STAGES
from runs import db
from runs.episode.scoring import score_prediction
from runs.models import Episode, Run, Status, Step
from runs.services import episode_record_ids

SNR_LEVELS = tuple(range(2, -8, -1))  # +2 … -7 dB
T6_SLEEP_CASSETTE = 153
T6_NIGHTS = 197
TOOLS_BY_TASK = {
    "T2": ("compute_psd", "compute_temporal_features", "detect_transients"),
    "T3": ("compute_psd", "detect_transients", "compute_temporal_features"),
    "T4": ("compute_band_power", "compute_asymmetry", "get_channel_list"),
    "T5": ("get_channel_list", "compute_windowed_features", "compute_windowed_features"),
    "T6": ("compute_noise_metrics", "compute_windowed_features", "compute_windowed_features"),
}


def _t2_instances() -> Iterable[dict]:
    for index in range(100):
        yield {"scenario_id": f"c2_artifact:edn_clean_{index:04d}",
               "reference": {"label": "clean", "artifact_source": None, "snr_db": None}}
    for label, source, tag in (("ocular_contaminated", "EOG", "eog"), ("muscle_contaminated", "EMG", "emg")):
        for level in SNR_LEVELS:
            for index in range(10):
                sign = "p" if level >= 0 else "m"
                yield {"scenario_id": f"c2_artifact:edn_{tag}_{sign}{abs(level)}_{index:04d}",
                       "reference": {"label": label, "artifact_source": source, "snr_db": level}}


def _t5_instances() -> Iterable[dict]:
    for index in range(280):
        subject = f"chb{index % 24 + 1:02d}"
        positive = index % 2 == 0
        onset = 600.0 + 20 * (index % 50)
        yield {
            "scenario_id": f"c1_seizure_{subject}_{index:03d}",
            "subject": subject,
            "duration_sec": 3600.0,
            "reference": {
                "label": "seizure" if positive else "no_seizure",
                "has_seizure": positive,
                "n_seizures": int(positive),
                "seizure_events": [[onset, onset + 60.0]] if positive else [],
            },
        }


def _t6_instances(epochs_per_night: int | None, rng: random.Random) -> Iterable[dict]:
    for index in range(T6_NIGHTS):
        cassette = index < T6_SLEEP_CASSETTE
        subject = f"SC4{index:02d}" if cassette else f"ST7{index - T6_SLEEP_CASSETTE:02d}"
        hours = 6 + 16 * index / (T6_NIGHTS - 1)  # 6 h … 22 h, spread over the seven bins
        n_epochs = epochs_per_night or int(hours * 120)
        labels, stage = [], "W"
        while len(labels) < n_epochs:
            labels.extend([stage] * rng.randint(5, 40))
            stage = rng.choice(STAGES)
        yield {
            "scenario_id": f"c3_sleep_{'sc' if cassette else 'st'}_{subject}1E0",
            "subject": subject,
            "duration_sec": hours * 3600,
            "n_epochs": n_epochs,
            "reference": {"label": "sleep_session", "epoch_labels_aasm": labels[:n_epochs], "n_epochs_total": n_epochs},
        }


def official_suite(
    *, name: str = "eegagentbench", synthetic: bool = False, epochs_per_night: int | None = 20, seed: int = 0
) -> Suite:
    """A suite named ``name`` with the official 1,072 instances (T6 nights of ``epochs_per_night``
    epochs, or of their real length ``hours × 120`` when None)."""
    rng = random.Random(seed)
    release = Release.objects.create(
        name=f"{name} (test)", version="1", is_synthetic=synthetic, source="tests/leaderboard/boards.py",
        manifest={"name": name},
    )
    suite = Suite.objects.create(name=name, release=release)
    tasks = {task.code: task for task in Task.objects.all()}
    specs: dict[str, Iterable[dict]] = {
        "T1": (
            {"scenario_id": f"k0_medmcqa_{index:03d}",
             "prompt_input": {"question": f"Question {index}?", "options": {letter: f"Option {letter}{index}"
                                                                            for letter in "ABCD"}},
             "reference": {"answer": "ABCD"[index % 4]}}
            for index in range(38)
        ),
        "T2": _t2_instances(),
        "T3": (
            {"scenario_id": f"c3_routine_bonn_{'S' if index % 2 else 'Z'}{index:03d}",
             "reference": {"label": "epileptic" if index % 2 else "normal"}}
            for index in range(188)
        ),
        "T4": (
            {"scenario_id": f"c4_dementia_ds004504_sub-{index:03d}", "subject": f"sub-{index:03d}",
             "reference": {"label": REFERENCE_CLASSES["T4"][index % 3]}}
            for index in range(69)
        ),
        "T5": _t5_instances(),
        "T6": _t6_instances(epochs_per_night, rng),
    }
    instances = []
    for code, rows in specs.items():
        for position, fields in enumerate(rows):
            instances.append(Instance(
                suite=suite, task=tasks[code], position=position,
                record_id=f"rec_{code.lower()}{position:04d}{name[:8]}", **fields,
            ))
    Instance.objects.bulk_create(instances, batch_size=500)
    return suite


def model_spec(name: str, **fields) -> ModelSpec:
    defaults = {"provider_model": f"test/{name.lower()}", "family": "Test", "is_open_weight": True,
                "input_price_per_mtok": Decimal("1"), "output_price_per_mtok": Decimal("2")}
    return ModelSpec.objects.create(name=name, **{**defaults, **fields})


def answer(instance: Instance, correct: bool, rng: random.Random) -> dict:
    """A final answer for ``instance``: the reference's when ``correct``, a wrong one otherwise."""
    task, reference = instance.task.code, instance.reference
    if task == "T1":
        letters = "ABCD" if correct else "ABCD".replace(reference["answer"], "")
        return {"answer": reference["answer"] if correct else rng.choice(letters)}
    if task in ("T2", "T3", "T4"):
        wrong = [label for label in REFERENCE_CLASSES[task] if label != reference["label"]]
        return {"classification": reference["label"] if correct else rng.choice(wrong), "findings": []}
    if task == "T5":
        events = reference["seizure_events"]
        if correct:
            return {"seizure_events": [{"onset_sec": on, "offset_sec": off} for on, off in events]}
        return {"seizure_events": [] if events else [{"onset_sec": 100.0, "offset_sec": 160.0}]}
    labels = reference["epoch_labels_aasm"] if correct else ["N2"] * instance.n_epochs
    rle, start = [], 0
    for index in range(1, len(labels) + 1):
        if index == len(labels) or labels[index] != labels[start]:
            rle.append({"start_epoch": start, "end_epoch": index - 1, "stage": labels[start]})
            start = index
    return {"hypnogram_rle": rle, "architecture": {}}


def trajectory_steps(episode: Episode, task: str, n_steps: int, result_chars: int) -> list[Step]:
    """A prompt, then agent turns and tool calls in turn, then the final answer: ``n_steps`` steps."""
    steps = [Step(episode=episode, index=0, kind=Step.Kind.PROMPT,
                  result={"messages": [{"role": "system", "content": "x" * 2000},
                                       {"role": "user", "content": "y" * 800}], "protocol": "text"})]
    tools = TOOLS_BY_TASK.get(task, ())
    for index in range(1, n_steps - 1):
        if tools and index % 2 == 0:
            tool = tools[(index // 2) % len(tools)]
            steps.append(Step(episode=episode, index=index, kind=Step.Kind.TOOL_CALL, tool_name=tool,
                              arguments={"record_id": episode.instance.record_id},
                              result={"status": "ok", "content": {"rows": "r" * result_chars}},
                              text="r" * result_chars, latency_ms=12.0))
        else:
            steps.append(Step(episode=episode, index=index, kind=Step.Kind.AGENT_MESSAGE,
                              text="I will look at the spectrum next. " * 8, prompt_tokens=3000,
                              completion_tokens=120, latency_ms=900.0))
    steps.append(Step(episode=episode, index=max(n_steps - 1, 1), kind=Step.Kind.FINAL_ANSWER,
                      arguments=episode.prediction))
    return steps


def add_run(
    *,
    suite: Suite,
    model: ModelSpec,
    skill: float = 0.7,
    tasks: Iterable[str] = ("T1", "T2", "T3", "T4", "T5", "T6"),
    complete: float = 1.0,
    steps_per_episode: int = 0,
    result_chars: int = 300,
    seed: int = 0,
    prompt_set: str = "official",
    settings: dict | None = None,
) -> Run:
    """A run of ``model`` on ``suite`` whose first ``complete`` share of episodes per task is completed.

    By default it is made as the paper's runs were (the official prompt set and configs' settings), so
    it is comparable with the paper's rows on the official suite; ``prompt_set`` and ``settings`` change that.

    Each completed episode is right with probability ``skill``, is scored by ``runs.episode.scoring.score_prediction``
    and, with ``steps_per_episode``, gets that many steps (one tool call every other step). The others
    stay pending. Episodes and steps are written with one bulk insert each.
    """
    rng = random.Random(seed)
    codes = sorted(set(tasks))
    run = Run.objects.create(
        suite=suite, model=model, tasks=codes, name=f"{model.name} run",
        status=Status.COMPLETED if complete >= 1 else Status.RUNNING, prompt_set=prompt_set,
        **({"settings": settings} if settings is not None else {}),
    )
    instances = list(
        suite.instances.filter(task__code__in=codes).select_related("task").order_by("task__code", "position")
    )
    by_task: dict[str, list[Instance]] = {}
    for instance in instances:
        by_task.setdefault(instance.task.code, []).append(instance)
    episodes = []
    for task, task_instances in by_task.items():
        n_completed = round(len(task_instances) * complete)
        for position, instance in enumerate(task_instances):
            if position >= n_completed:
                episodes.append(Episode(run=run, instance=instance))
                continue
            prediction = answer(instance, rng.random() < skill, rng)
            episodes.append(Episode(
                run=run, instance=instance, status=Status.COMPLETED, ended_by=Episode.EndedBy.FINAL_ANSWER,
                finished_at=timezone.now(), final_answer=prediction, prediction=prediction,
                scores=score_prediction(instance, prediction), prompt_tokens=20_000, completion_tokens=800,
                n_tool_calls=(steps_per_episode - 2) // 2 if task != "T1" and steps_per_episode > 2 else 0,
                cost_usd=Decimal("0.0216"),
            ))
    for episode, record_id in zip(episodes, episode_record_ids([episode.instance for episode in episodes])):
        episode.record_id = record_id
    Episode.objects.bulk_create(episodes, batch_size=500)
    if steps_per_episode:
        steps = [
            step
            for episode in episodes if episode.status == Status.COMPLETED
            for step in trajectory_steps(episode, episode.instance.task.code, steps_per_episode, result_chars)
        ]
        Step.objects.bulk_create(steps, batch_size=2000)
    db.refresh_totals(run)
    return run
