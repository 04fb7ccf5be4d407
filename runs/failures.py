"""Why an episode went wrong: the failure modes of one trajectory, and its evidence coverage.

Pure code (no Django, no database), deterministic and computed from what the steps record, so the
same trajectory always gets the same modes. ``runs.episode.failures`` reads an episode into a
:class:`Trajectory`; :func:`classify` gives its modes in the order of :data:`CODES`, each with the
steps that show it, and its evidence coverage. An episode may have several modes, and a correct
one some. docs/failure_modes.md says the same for users.

The modes, by what they look at:

- the tool calls: ``no_tool_call``, ``no_signal_read``, ``repeated_call``, ``tool_errors``,
  ``rescope_loop``;
- the evidence: ``low_coverage``, from the **evidence coverage** of a signal task (T2-T6): the union
  of the time ranges its signal-reading calls read before the answer (``tools_app.spans``, the
  tools' own reading of their arguments), over the record's duration, from 0 to 1;
- the answer, as the scorer reads it: ``invalid_answer``, ``missed_all_seizures`` and
  ``false_alarm`` (T5, ``benchmark.scoring.seizure``), ``constant_hypnogram`` and ``wrong_length``
  (T6, ``benchmark.scoring.hypnogram``). Only an episode that answered has these; one that ended
  without an answer has the mode of how it ended instead;
- how the episode ended (``ended_by``) when a limit or a failure ended it.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

from benchmark.scoring.hypnogram import expand_rle
from benchmark.scoring.seizure import any_touching_overlap, parse_raw_events, union
from tools_app.errors import ErrorCode
from tools_app.spans import HEADER_TOOLS, SIGNAL_TOOLS, read_intervals

#: Tasks whose agent reads a recording (T1 answers from the question alone).
SIGNAL_TASKS = frozenset({"T2", "T3", "T4", "T5", "T6"})
#: Tasks on long records, where reading too little of the record is a mode.
COVERAGE_TASKS = frozenset({"T5", "T6"})

#: Calls of one tool with the same arguments that make a repeated call.
REPEATED = 2
#: Calls answered with an error that make ``tool_errors``.
TOOL_ERRORS = 3
#: ``output_too_large`` errors in a row that make a ``rescope_loop``.
RESCOPE_RUN = 3
#: The evidence coverage below which a T5 or T6 answer has ``low_coverage``.
LOW_COVERAGE = 0.5

#: How an episode may end that is a mode of its own (``runs.models.Episode.EndedBy``): its limits and
#: failures. A final answer is not one, nor are a cancelled run, an external agent that stopped acting
#: or a lost process, which say nothing of the agent.
ENDED_BY_CODES = (
    "turn_limit", "tool_call_limit", "context_exceeded", "cost_cap", "provider_error", "format_failure",
)  # fmt: skip

#: Every failure mode, code -> definition, in the order they are shown.
CODES: dict[str, str] = {
    "no_tool_call": "A signal task (T2-T6) answered without any tool call.",
    "no_signal_read": (
        f"A signal task answered without reading the signal: only header tools ({', '.join(sorted(HEADER_TOOLS))}) "
        "were called, or every signal tool called returned an error."
    ),
    "repeated_call": f"The same tool called {REPEATED} or more times with the same arguments.",
    "tool_errors": f"{TOOL_ERRORS} or more tool calls answered with an error.",
    "rescope_loop": (
        f"{RESCOPE_RUN} or more output_too_large errors in a row: the agent kept asking for more than a call "
        "may return."
    ),
    "invalid_answer": "The final answer failed the task's output schema (scored as invalid).",
    "low_coverage": (
        f"T5 or T6: the signal-reading calls covered less than {LOW_COVERAGE:.0%} of the record's duration "
        "before the answer."
    ),
    "missed_all_seizures": "T5: the record has seizures and no predicted event overlaps or touches any of them.",
    "false_alarm": "T5: the record is seizure-free and the answer predicts a seizure.",
    "constant_hypnogram": "T6: the hypnogram gives every epoch the same stage.",
    "wrong_length": "T6: the hypnogram does not run to the night's last epoch: it ends before it or goes past it.",
    "turn_limit": "Ended at the turn limit without an answer.",
    "tool_call_limit": "Ended without an answer, calling tools after its tool calls were used up.",
    "context_exceeded": "Ended when the conversation outgrew the model's context window.",
    "cost_cap": "Ended at a cap of its run without an answer: time, tokens or cost.",
    "provider_error": "Ended when the model's provider failed after every retry.",
    "format_failure": "Ended after four turns in a row without a usable action or a valid answer.",
}


@dataclass(frozen=True)
class Call:
    """One tool call that was run.

    Attributes
    ----------
    index : int
        Its step's index in the episode.
    tool : str
    arguments : dict
        As the agent gave them.
    error_code : str | None
        None when the tool answered without error; otherwise the error's code (``tools_app.errors.ErrorCode``,
        such as ``"output_too_large"``, or ``"tool_not_available"`` for a tool the task does not allow).
    """

    index: int
    tool: str
    arguments: dict
    error_code: str | None = None


@dataclass(frozen=True)
class Trajectory:
    """What the classification reads of an episode.

    Attributes
    ----------
    task : str
        ``"T1"`` … ``"T6"``.
    calls : tuple of Call
        The tool calls that were run, in order.
    answer_step : int | None
        The index of the step that gave the final answer, if any.
    answered : bool
        Whether the episode gave a final answer (a valid one, or an invalid one it ended with).
    valid_answer : bool | None
        Whether that answer passed the task's output schema; None without an answer.
    ended_by : str
        ``runs.models.Episode.EndedBy``'s value, or ``""``.
    prediction : dict | None
        The answer as the scorer reads it; None without an answer.
    reference : dict
        The instance's hidden reference (its answer key's ``gold``).
    duration_sec : float | None
        The record's duration in s, if known.
    n_epochs : int | None
        T6: the night's number of 30-s epochs as the scorer counts them, if known.
    end_step : int | None
        The index of the episode's last step, where it ended.
    """

    task: str
    calls: tuple[Call, ...] = ()
    answer_step: int | None = None
    answered: bool = False
    valid_answer: bool | None = None
    ended_by: str = ""
    prediction: dict | None = None
    reference: dict | None = None
    duration_sec: float | None = None
    n_epochs: int | None = None
    end_step: int | None = None

    def calls_before_answer(self) -> tuple[Call, ...]:
        """The calls made before the answer (all of them without one)."""
        if self.answer_step is None:
            return self.calls
        return tuple(call for call in self.calls if call.index < self.answer_step)

    def signal_reads(self) -> tuple[Call, ...]:
        """The calls before the answer that read the signal: a signal tool answered without error."""
        before = self.calls_before_answer()
        return tuple(call for call in before if call.tool in SIGNAL_TOOLS and call.error_code is None)


@dataclass(frozen=True)
class Mode:
    """A failure mode found in a trajectory, and the indexes of the steps that show it, in order."""

    code: str
    steps: tuple[int, ...]


def evidence_coverage(trajectory: Trajectory) -> float | None:
    """The share of the record the signal-reading calls read before the answer, from 0 to 1.

    The union of the time ranges the calls read (``tools_app.spans.read_intervals``), over the
    record's duration; None for a task without a recording (T1) or a record of unknown duration.
    """
    duration = trajectory.duration_sec
    if trajectory.task not in SIGNAL_TASKS or duration is None or not math.isfinite(duration) or duration <= 0:
        return None
    read = [interval for call in trajectory.signal_reads()
            for interval in read_intervals(call.tool, call.arguments, duration_sec=duration)]
    return min(sum(stop - start for start, stop in union(read)) / duration, 1.0)


def classify(trajectory: Trajectory) -> tuple[list[Mode], float | None]:
    """The failure modes of ``trajectory``, in the order of :data:`CODES`, and its evidence coverage."""
    coverage = evidence_coverage(trajectory)
    found = {**tool_use_modes(trajectory), **answer_modes(trajectory, coverage)}
    if trajectory.ended_by in ENDED_BY_CODES:
        found[trajectory.ended_by] = _at(trajectory.end_step)
    return [Mode(code, tuple(sorted(found[code]))) for code in CODES if code in found], coverage


def tool_use_modes(trajectory: Trajectory) -> dict[str, tuple[int, ...]]:
    """The modes of the tool calls, each with the steps that show it: code -> step indexes."""
    found = {}
    calls = trajectory.calls
    if trajectory.task in SIGNAL_TASKS and trajectory.answered:
        before = trajectory.calls_before_answer()
        if not before:
            found["no_tool_call"] = _at(trajectory.answer_step)
        elif not trajectory.signal_reads():
            found["no_signal_read"] = tuple(call.index for call in before) + _at(trajectory.answer_step)
    by_request: dict[str, list[int]] = {}
    for call in calls:
        by_request.setdefault(_request_key(call), []).append(call.index)
    repeated = [index for indexes in by_request.values() if len(indexes) >= REPEATED for index in indexes]
    if repeated:
        found["repeated_call"] = tuple(repeated)
    errors = [call.index for call in calls if call.error_code is not None]
    if len(errors) >= TOOL_ERRORS:
        found["tool_errors"] = tuple(errors)
    loops = [index for run in _runs_of(calls, ErrorCode.OUTPUT_TOO_LARGE) if len(run) >= RESCOPE_RUN for index in run]
    if loops:
        found["rescope_loop"] = tuple(loops)
    return found


def answer_modes(trajectory: Trajectory, coverage: float | None) -> dict[str, tuple[int, ...]]:
    """The modes of the answer and of the evidence behind it, each at the answer's step: code -> step indexes."""
    if not trajectory.answered:
        return {}
    found = {}
    answer = _at(trajectory.answer_step)
    if trajectory.valid_answer is False:
        found["invalid_answer"] = answer
    if trajectory.task in COVERAGE_TASKS and coverage is not None and coverage < LOW_COVERAGE:
        found["low_coverage"] = tuple(call.index for call in trajectory.signal_reads()) + answer
    prediction = trajectory.prediction if isinstance(trajectory.prediction, dict) else {}
    reference = trajectory.reference or {}
    if trajectory.task == "T5":
        # The events as the scorer reads them for its miss and over-alarm rates.
        gold = parse_raw_events(reference.get("seizure_events", []))
        predicted = parse_raw_events(prediction.get("seizure_events") or [])
        if gold and not any_touching_overlap(gold, predicted):
            found["missed_all_seizures"] = answer
        if not gold and predicted:
            found["false_alarm"] = answer
    if trajectory.task == "T6" and trajectory.n_epochs:
        rle = prediction.get("hypnogram_rle", [])
        if len(set(expand_rle(rle, trajectory.n_epochs).labels)) == 1:
            found["constant_hypnogram"] = answer
        if hypnogram_length(rle) != trajectory.n_epochs:
            found["wrong_length"] = answer
    return found


def hypnogram_length(rle) -> int:
    """The number of epochs a predicted hypnogram runs to: one past the last epoch of the rows the scorer
    expands (``benchmark.scoring.hypnogram.expand_rle``), 0 when it expands none."""
    rows = rle if isinstance(rle, list) else []
    return max((int(row["end_epoch"]) + 1 for row in rows if expand_rle([row], 1).n_valid_segments), default=0)


def _at(index: int | None) -> tuple[int, ...]:
    return () if index is None else (index,)


def _request_key(call: Call) -> str:
    """The tool and its arguments as one text, equal for equal requests whatever the order of the keys."""
    return json.dumps([call.tool, call.arguments], sort_keys=True, default=str)


def _runs_of(calls: tuple[Call, ...], error_code: str) -> list[list[int]]:
    """The runs of consecutive calls answered with ``error_code``, as their step indexes."""
    runs, current = [], []
    for call in calls:
        if call.error_code == error_code:
            current.append(call.index)
        elif current:
            runs.append(current)
            current = []
    return runs + ([current] if current else [])
