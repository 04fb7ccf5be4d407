"""Failure modes and evidence coverage: one hand-made trajectory per mode, found where it happened and nowhere
else; coverage worked out by hand; and the modes of episodes played through the episode loop."""
import dataclasses

import pytest

from runs import failures
from runs.episode.engine import run_episode
from runs.episode.failures import classify_episode, error_code
from runs.failures import CODES, Call, Trajectory, classify, evidence_coverage, hypnogram_length
from runs.models import Episode, Step
from runs.services import create_run
from tests.runs.scripted_agent import ScriptedAgent

RECORD = "rec"
HOUR = 3600.0
POSITIVE = {"label": "seizure", "has_seizure": True, "n_seizures": 1, "seizure_events": [[2282.0, 2372.0]]}
SEIZURE_FREE = {"label": "no_seizure", "has_seizure": False, "n_seizures": 0, "seizure_events": []}
NIGHT = {"label": "sleep_session", "epoch_labels_aasm": ["W", "N1", "N2", "N2"], "n_epochs_total": 4}


def call(index, tool="compute_psd", error=None, **arguments):
    return Call(index=index, tool=tool, arguments={"record_id": RECORD, **arguments}, error_code=error)


def rle(*rows):
    return {"hypnogram_rle": [{"start_epoch": start, "end_epoch": end, "stage": stage} for start, end, stage in rows],
            "architecture": {"REM_pct": 0.0, "N3_pct": 0.0, "sleep_efficiency": 0.75}}


#: A sound episode of each task: it read the whole record, answered validly and, on T5 and T6, well.
SOUND = {
    "T1": Trajectory(task="T1", answer_step=2, answered=True, valid_answer=True, ended_by="final_answer",
                     prediction={"answer": "B"}, reference={"answer": "B"}),
    "T3": Trajectory(task="T3", calls=(call(2),), answer_step=4, answered=True, valid_answer=True,
                     ended_by="final_answer", prediction={"classification": "epileptic"},
                     reference={"label": "epileptic"}, duration_sec=23.6),
    "T5": Trajectory(task="T5", calls=(call(2, "compute_windowed_features", window_sec=30),), answer_step=4,
                     answered=True, valid_answer=True, ended_by="final_answer",
                     prediction={"seizure_events": [{"onset_sec": 2300.0, "offset_sec": 2350.0}]},
                     reference=POSITIVE, duration_sec=HOUR),
    "T6": Trajectory(task="T6", calls=(call(2, "compute_windowed_features", window_sec=30),), answer_step=4,
                     answered=True, valid_answer=True, ended_by="final_answer",
                     prediction=rle((0, 0, "W"), (1, 1, "N1"), (2, 3, "N2")), reference=NIGHT,
                     duration_sec=120.0, n_epochs=4),
}  # fmt: skip


def sound(task, **changes):
    return dataclasses.replace(SOUND[task], **changes)


def found(trajectory):
    """The modes of ``trajectory`` as {code: steps}."""
    modes, _ = classify(trajectory)
    return {mode.code: mode.steps for mode in modes}


@pytest.mark.parametrize("task", sorted(SOUND))
def test_a_sound_episode_has_no_mode(task):
    assert found(SOUND[task]) == {}


UNANSWERED = {"answered": False, "valid_answer": None, "prediction": None, "answer_step": None, "end_step": 9}

#: One trajectory per mode, made to have that mode only (a rescope loop is three errors, so tool_errors too).
EACH_MODE = {
    "no_tool_call": (sound("T3", calls=(), answer_step=2), {"no_tool_call": (2,)}),
    "no_signal_read": (
        sound("T3", calls=(call(2, "get_recording_info"), call(4, "get_channel_list")), answer_step=6),
        {"no_signal_read": (2, 4, 6)},
    ),
    "no_signal_read, every signal call refused": (
        sound("T3", calls=(call(2, "get_channel_list"), call(4, "compute_psd", "unknown_channel", channels=["X"])),
              answer_step=6),
        {"no_signal_read": (2, 4, 6)},
    ),
    "repeated_call": (
        sound("T3", calls=(call(2, tmin=0, tmax=10), call(4, "compute_band_power"),
                           Call(6, "compute_psd", {"tmax": 10, "tmin": 0, "record_id": RECORD})), answer_step=8),
        {"repeated_call": (2, 6)},
    ),
    "tool_errors": (
        sound("T3", calls=(call(2, error="unknown_channel", channels=["X"]), call(4),
                           call(6, error="out_of_range", tmin=99), call(8, "compute_lsd", "tool_not_available")),
              answer_step=10),
        {"tool_errors": (2, 6, 8)},
    ),
    "rescope_loop": (
        sound("T5", calls=tuple(call(index, "compute_windowed_features", "output_too_large", tmax=tmax)
                                for index, tmax in ((2, 3600), (4, 1800), (6, 900)))
              + (call(8, "compute_windowed_features", window_sec=60),), answer_step=10),
        {"tool_errors": (2, 4, 6), "rescope_loop": (2, 4, 6)},
    ),
    "invalid_answer": (sound("T3", valid_answer=False), {"invalid_answer": (4,)}),
    "low_coverage": (
        sound("T5", calls=(call(2, tmax=1000), call(4, "compute_band_power", tmin=500, tmax=1700))),
        {"low_coverage": (2, 4)},
    ),
    "missed_all_seizures": (
        sound("T5", prediction={"seizure_events": [{"onset_sec": 100, "offset_sec": 160}, [2000, 2281.9]]}),
        {"missed_all_seizures": (4,)},
    ),
    "false_alarm": (
        sound("T5", reference=SEIZURE_FREE, prediction={"seizure_events": [[100, 160]]}),
        {"false_alarm": (4,)},
    ),
    "constant_hypnogram": (sound("T6", prediction=rle((0, 3, "N2"))), {"constant_hypnogram": (4,)}),
    "wrong_length, short": (sound("T6", prediction=rle((0, 1, "W"), (2, 2, "N1"))), {"wrong_length": (4,)}),
    "wrong_length, long": (sound("T6", prediction=rle((0, 1, "W"), (2, 5, "N1"))), {"wrong_length": (4,)}),
    **{code: (sound("T3", ended_by=code, **UNANSWERED), {code: (9,)}) for code in failures.ENDED_BY_CODES},
}  # fmt: skip


@pytest.mark.parametrize(("trajectory", "expected"), EACH_MODE.values(), ids=EACH_MODE.keys())
def test_each_mode_is_found_where_it_happened_and_nowhere_else(trajectory, expected):
    assert found(trajectory) == expected


def test_every_code_has_a_trajectory_that_shows_it():
    shown = {code for _, expected in EACH_MODE.values() for code in expected}
    assert shown == set(CODES)


def test_the_codes_are_those_of_the_issue_and_every_limit_an_episode_ends_by():
    ended_by = set(Episode.EndedBy.values) - {"final_answer", "cancelled", "abandoned", "process_lost"}
    assert set(failures.ENDED_BY_CODES) == ended_by
    assert list(CODES)[:11] == [
        "no_tool_call", "no_signal_read", "repeated_call", "tool_errors", "rescope_loop", "invalid_answer",
        "low_coverage", "missed_all_seizures", "false_alarm", "constant_hypnogram", "wrong_length",
    ]  # fmt: skip
    assert all(definition.endswith(".") for definition in CODES.values())


def test_modes_come_in_the_order_of_the_codes_with_their_steps_in_order():
    trajectory = sound("T6", calls=(call(2, "get_channel_list"), call(4, "get_channel_list")), answer_step=6,
                       valid_answer=False, prediction=rle((0, 9, "N2")), ended_by="format_failure", end_step=7)
    modes, coverage = classify(trajectory)
    assert [(mode.code, mode.steps) for mode in modes] == [
        ("no_signal_read", (2, 4, 6)), ("repeated_call", (2, 4)), ("invalid_answer", (6,)), ("low_coverage", (6,)),
        ("constant_hypnogram", (6,)), ("wrong_length", (6,)), ("format_failure", (7,)),
    ]  # fmt: skip
    assert coverage == 0.0


def test_the_thresholds_are_where_the_issue_puts_them():
    assert (failures.REPEATED, failures.TOOL_ERRORS, failures.RESCOPE_RUN, failures.LOW_COVERAGE) == (2, 3, 3, 0.5)
    two_errors = sound("T3", calls=(call(2, error="out_of_range", tmin=99), call(4, error="out_of_range", tmin=98)),
                       answer_step=6)
    assert "tool_errors" not in found(two_errors)
    windowed = "compute_windowed_features"
    broken_run = sound("T5", calls=(
        call(2, windowed, "output_too_large"), call(4, windowed, "output_too_large", tmax=9),
        call(6, error="unknown_channel", channels=["X"]),
        call(8, windowed, "output_too_large", tmax=8), call(10, windowed, window_sec=9),
    ), answer_step=12)  # fmt: skip
    assert found(broken_run) == {"tool_errors": (2, 4, 6, 8)}  # no three output_too_large in a row
    half = sound("T5", calls=(call(2, tmin=1800),))
    assert evidence_coverage(half) == 0.5 and "low_coverage" not in found(half)


def test_a_signal_task_that_answered_without_reading_has_low_coverage_too_on_a_long_record():
    assert found(sound("T5", calls=(), answer_step=2)) == {"no_tool_call": (2,), "low_coverage": (2,)}


def test_an_episode_without_an_answer_has_no_mode_of_an_answer():
    trajectory = sound("T5", calls=(), ended_by="turn_limit", **UNANSWERED)
    assert found(trajectory) == {"turn_limit": (9,)}
    assert evidence_coverage(trajectory) == 0.0


def test_a_mode_of_how_the_episode_ended_is_not_one_of_a_cancelled_run_or_a_final_answer():
    for ended_by in ("cancelled", "abandoned", "process_lost", "final_answer", ""):
        assert found(sound("T3", ended_by=ended_by)) == {}


# ── evidence coverage ───────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(("calls", "expected"), [
    ((), 0.0),
    ((call(2, "get_recording_info"), call(3, "get_channel_list")), 0.0),  # header tools read no sample
    ((call(2, "detect_transients"),), 1.0),  # no time arguments: the whole record
    ((call(2, tmin=1800),), 0.5),  # no end: to the record's end
    ((call(2, tmax=900),), 0.25),  # no start: from the record's start
    ((call(2, tmax=1000), call(3, "compute_band_power", tmin=500, tmax=1500)), 1500 / HOUR),  # overlapping
    ((call(2, tmax=900), call(3, "compute_temporal_features", tmin=900, tmax=1800)), 0.5),  # touching
    ((call(2, "compute_asymmetry", tmin=3000, tmax=9000), call(3, tmax=600)), 1200 / HOUR),  # clipped at the end
    ((call(2, "compute_noise_metrics", tmin=0, tmax=10),), 1.0),  # whatever its arguments
    ((call(2, tmax=1800), call(3, tmin=1800, error="output_too_large")), 0.5),  # a refused call read nothing
    ((call(2, "compute_windowed_features", window_sec=30, step_sec=300),), 12 * 30 / HOUR),  # at 0, 300 … 3300 s
    ((call(2, "compute_windowed_features", window_sec=30, step_sec=20),), 3590 / HOUR),  # the last 10 s unread
    ((call(2, tmax=1800), call(9, tmin=1800)), 0.5),  # a call after the answer came too late
])  # fmt: skip
def test_evidence_coverage_is_the_union_of_what_was_read_before_the_answer_over_the_duration(calls, expected):
    trajectory = sound("T5", calls=calls, answer_step=8)
    assert evidence_coverage(trajectory) == pytest.approx(expected)
    assert classify(trajectory)[1] == evidence_coverage(trajectory)


def test_evidence_coverage_is_none_without_a_recording_or_a_duration():
    assert evidence_coverage(SOUND["T1"]) is None
    assert evidence_coverage(sound("T5", duration_sec=None)) is None
    assert evidence_coverage(sound("T5", duration_sec=0.0)) is None


def test_a_short_record_read_in_part_is_no_low_coverage_outside_t5_and_t6():
    trajectory = sound("T3", calls=(call(2, tmax=2.36),))
    assert evidence_coverage(trajectory) == pytest.approx(0.1)
    assert found(trajectory) == {}


@pytest.mark.parametrize(("rows", "length"), [
    ([], 0),
    ([{"start_epoch": 0, "end_epoch": 3, "stage": "W"}], 4),
    ([{"start_epoch": 0, "end_epoch": 9, "stage": "N2"}, {"start_epoch": 2, "end_epoch": 3, "stage": "W"}], 10),
    ([{"start_epoch": 0, "end_epoch": "5", "stage": "rem"}, {"start_epoch": 0, "end_epoch": 20, "stage": "?"}], 6),
    ([{"start_epoch": 4, "end_epoch": 2, "stage": "W"}, "row", {"end_epoch": 7, "stage": "W"}], 0),
])  # fmt: skip
def test_a_hypnograms_length_counts_the_rows_the_scorer_expands(rows, length):
    assert hypnogram_length(rows) == length


# ── the reader ──────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(("result", "error", "expected"), [
    ({"status": "ok", "content": {"_meta": {}, "peak_hz": 9.5}}, "", None),
    ({"status": "ok", "content": {"record_id": RECORD, "error": "No.", "error_code": "unknown_channel"}}, "",
     "unknown_channel"),
    ({"status": "ok", "content": {"record_id": RECORD, "error": "Output too large: ...", "budget_tokens": 8000}}, "",
     "output_too_large"),  # the official runner's refusal has no code
    ({"status": "ok", "content": {"record_id": RECORD, "error": "No valid features requested."}}, "", "error"),
    ({"status": "tool_not_available", "content": None}, "Tool 'x' is not allowed for this scenario.",
     "tool_not_available"),
    ({"status": "error", "content": None}, "Tool execution failed: boom", "internal_error"),  # official: it raised
])  # fmt: skip
def test_a_tool_calls_error_code_is_read_from_its_result(result, error, expected):
    content = result["content"] if isinstance(result["content"], dict) else {}
    assert error_code(status=result["status"], error=error, content_error=content.get("error"),
                      content_code=content.get("error_code"), budget_tokens=content.get("budget_tokens")) == expected


class ScriptedTools:
    """The episode's tools: answers each call with the next of ``results`` (a small result when none is left)."""

    def __init__(self, *results):
        self.results = list(results)

    def __call__(self, instance, tool_name, arguments):
        if self.results:
            return self.results.pop(0)
        return {"_meta": {"approx_response_tokens": 12, "truncated": False}, "record_id": arguments.get("record_id")}


def too_large(record_id):
    return {"record_id": record_id, "error": "Output too large: ...", "error_code": "output_too_large",
            "budget_tokens": 8000, "estimated_tokens": 90000}


@pytest.fixture
def played(official_suite, model_spec):
    """``play(task, actions, *results, **limits)``: the run's episode of ``task`` played by a scripted agent."""

    def play(task, actions, *results, **limits):
        run = create_run(suite=official_suite, model=model_spec, tasks=[task], limits=limits)
        episode = run.episodes.get()
        record_id = episode.record_id
        script = [{**action, "arguments": {"record_id": record_id, **action["arguments"]}}
                  if action["action"] == "tool_call" else action for action in actions]
        answers = [result(record_id) if callable(result) else result for result in results]
        run_episode(episode_id=episode.pk, agent=ScriptedAgent(script), tool_runner=ScriptedTools(*answers))
        return Episode.objects.select_related("instance__task").get(pk=episode.pk)

    return play


def tool(name, **arguments):
    return {"action": "tool_call", "tool_name": name, "arguments": arguments}


@pytest.mark.django_db
def test_a_played_t5_episode_that_looped_repeated_itself_read_little_and_missed_the_seizure(played,
                                                                                          django_assert_num_queries):
    episode = played("T5", [
        tool("get_recording_info"),
        tool("compute_windowed_features", tmax=3600), tool("compute_windowed_features", tmax=1800),
        tool("compute_windowed_features", tmax=900),
        tool("compute_psd", tmax=600), tool("compute_psd", tmax=600),
        {"action": "final_answer", "seizure_events": [{"onset_sec": 100.0, "offset_sec": 160.0}]},
    ], None, too_large, too_large, too_large)
    # prompt 0; each turn an agent message (1, 3, …) and its call (2, 4, …); the answer at 14
    steps = dict(episode.steps.values_list("index", "kind"))
    assert [steps[index] for index in (2, 12, 14)] == [Step.Kind.TOOL_CALL, Step.Kind.TOOL_CALL, Step.Kind.FINAL_ANSWER]
    with django_assert_num_queries(1):
        modes, coverage = classify_episode(episode)
    assert modes == [
        {"code": "repeated_call", "steps": [10, 12]},
        {"code": "tool_errors", "steps": [4, 6, 8]},
        {"code": "rescope_loop", "steps": [4, 6, 8]},
        {"code": "low_coverage", "steps": [10, 12, 14]},
        {"code": "missed_all_seizures", "steps": [14]},
    ]
    assert coverage == pytest.approx(600 / 3600)


@pytest.mark.django_db
def test_a_played_t6_night_answered_short_four_times_ends_in_a_format_failure_with_its_invalid_answer(played):
    short = {"action": "final_answer", **rle((0, 1, "W"), (2, 2, "N2"))}
    episode = played("T6", [short])
    assert episode.ended_by == Episode.EndedBy.FORMAT_FAILURE and episode.final_answer is not None
    # the answer at 1, 3, 5 and 7, each followed by a nudge, then the error step that ended the episode
    modes, coverage = classify_episode(episode)
    assert modes == [
        {"code": "no_tool_call", "steps": [7]},
        {"code": "invalid_answer", "steps": [7]},
        {"code": "low_coverage", "steps": [7]},
        {"code": "wrong_length", "steps": [7]},
        {"code": "format_failure", "steps": [8]},
    ]
    assert coverage == 0.0


@pytest.mark.django_db
def test_a_played_t3_episode_that_read_only_the_header(played):
    episode = played("T3", [tool("get_channel_list"), {"action": "final_answer", "classification": "epileptic"}])
    assert classify_episode(episode) == ([{"code": "no_signal_read", "steps": [2, 4]}], 0.0)


@pytest.mark.django_db
def test_a_played_t2_episode_stopped_at_its_turn_limit(played):
    episode = played("T2", [tool("compute_psd", tmax=1.0)], max_turns=2)
    assert episode.ended_by == Episode.EndedBy.TURN_LIMIT
    last = episode.steps.order_by("-index").values_list("index", flat=True)[0]
    assert classify_episode(episode) == ([{"code": "repeated_call", "steps": [2, 4]},
                                          {"code": "turn_limit", "steps": [last]}], 0.5)


@pytest.mark.django_db
def test_a_played_t1_answer_has_no_mode_and_no_coverage(played):
    episode = played("T1", [{"action": "final_answer", "answer": "B"}])
    assert classify_episode(episode) == ([], None)
