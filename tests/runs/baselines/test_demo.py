"""Both baselines on the demo release, as ``manage.py demo`` plays them: an answer that degenerates fails.

The heuristic once read none of its tool results (the model-facing recording info stopped being
a Python literal) and answered [] to every T5 record and W to every T6 epoch while the suite
passed. Here it plays the demo under both prompt sets; each of its tool results must read back,
some must be results rather than refusals, no task's answers may be empty or constant on every
instance, and its T5 Event-F1 and T6 macro-F1 must stand well above the random baseline's.
"""
import pytest

from benchmark.models import ModelSpec
from benchmark.scoring import TASK_IDS
from benchmark.wording import OFFICIAL, PLATFORM, TOOL_RESULT_PREFIX
from runs.baselines.results import read_tool_result
from runs.episode.loop import Kind
from runs.models import Status
from runs.queue.local import run_sync
from runs.reports import run_report
from runs.services import create_run
from tests.runs.demo_suite import import_demo

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

#: How far above the random baseline the heuristic's T5 Event-F1 and T6 macro-F1 must be.
MARGIN = 0.3


def play(suite, provider_model: str, prompt_set: str):
    model, _ = ModelSpec.objects.get_or_create(provider_model=provider_model, defaults={"name": provider_model})
    run = create_run(suite=suite, model=model, tasks=list(TASK_IDS), prompt_set=prompt_set)
    run = run_sync(run_id=run.pk)
    assert run.status == Status.COMPLETED and run.episodes.exclude(status=Status.COMPLETED).count() == 0
    return run


def degenerate(task: str, answers: list[dict]) -> str | None:
    """Why a task's answers over all its instances are degenerate, or None."""
    if task == "T5":
        return "no seizure on any record" if not any(answer.get("seizure_events") for answer in answers) else None
    if task == "T6":
        stages = [{segment["stage"] for segment in answer.get("hypnogram_rle") or ()} for answer in answers]
        return "one stage all night on every night" if all(len(staged) <= 1 for staged in stages) else None
    key = "answer" if task == "T1" else "classification"
    return f"the same {key} for every instance" if len({answer.get(key) for answer in answers}) <= 1 else None


def answers_by_task(run) -> dict[str, list[dict]]:
    answers: dict[str, list[dict]] = {}
    for task, prediction in run.episodes.values_list("instance__task__code", "prediction"):
        answers.setdefault(task, []).append(prediction or {})
    return answers


@pytest.mark.parametrize(
    ("task", "answers", "reason"),
    [
        ("T5", [{"seizure_events": []}] * 3, "no seizure on any record"),
        ("T6", [{"hypnogram_rle": [{"start_epoch": 0, "end_epoch": 9, "stage": "W"}]}] * 2,
         "one stage all night on every night"),
        ("T6", [{}, {}], "one stage all night on every night"),
        ("T2", [{"classification": "clean"}] * 4, "the same classification for every instance"),
        ("T1", [{"answer": "C"}] * 4, "the same answer for every instance"),
        ("T5", [{"seizure_events": []}, {"seizure_events": [{"onset_sec": 1, "offset_sec": 9}]}], None),
        ("T3", [{"classification": "normal"}, {"classification": "epileptic"}], None),
    ],
)
def test_degenerate_answers_are_told(task, answers, reason):
    assert degenerate(task, answers) == reason


def check_heuristic(run):
    answers = answers_by_task(run)
    # T1 is its fixed letter by design (HeuristicAgent's docstring); every other task must vary.
    assert {answer["answer"] for answer in answers.pop("T1")} == {"C"}
    assert {task: degenerate(task, task_answers) for task, task_answers in answers.items()} == dict.fromkeys(answers)
    for episode in run.episodes.exclude(instance__task__code="T1").prefetch_related("steps"):
        texts = [step.text for step in episode.steps.all() if step.kind == Kind.TOOL_CALL]
        assert texts and all(text.startswith(TOOL_RESULT_PREFIX) for text in texts)
        read = [read_tool_result(text.removeprefix(TOOL_RESULT_PREFIX)) for text in texts]
        assert any("error" not in result for result in read), (episode.pk, texts[:1])
        first = episode.steps.filter(kind=Kind.TOOL_CALL).order_by("index").first()
        if first.tool_name == "get_recording_info":  # the form the heuristic once could not read
            assert "(FIFFV_MNE_CUSTOM_REF_OFF)" in first.text and read[0]["duration_sec"] > 0


def primary_scores(run) -> dict[str, float]:
    return {task: summary["primary_score"] for task, summary in run_report(run)["tasks"].items()}


def test_neither_baseline_degenerates_on_the_demo_and_the_heuristic_beats_chance(official_standin):
    suite = import_demo()
    random_run = play(suite, "baseline/random", PLATFORM)
    answers = answers_by_task(random_run)
    assert {task: degenerate(task, task_answers) for task, task_answers in answers.items()} == dict.fromkeys(TASK_IDS)
    chance = primary_scores(random_run)
    for prompt_set in (PLATFORM, OFFICIAL):
        heuristic_run = play(suite, "baseline/heuristic", prompt_set)
        assert heuristic_run.prompt_set == prompt_set
        check_heuristic(heuristic_run)
        scores = primary_scores(heuristic_run)
        assert scores["T5"] >= chance["T5"] + MARGIN, (scores, chance)
        assert scores["T6"] >= chance["T6"] + MARGIN, (scores, chance)
