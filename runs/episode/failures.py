"""An episode's failure modes and evidence coverage: its stored steps read into a ``runs.failures.Trajectory``.

The steps are read in one query, and of a tool call's result only its status and the fields of an
error object (``tools_app.errors``: ``error``, ``error_code``; the official runner's objects have no
code, its output-too-large refusal has ``budget_tokens``), never the tool's whole output. The answer
is valid when it passes the check the episode loop applies (``runs.protocol.final_answer_errors``)
and the scorer read a label from it (T1-T4 score an unreadable one as ``predicted: ""``); the record's
duration, the night's epoch count and the reference are the scorer's (``runs.episode.scoring``).
"""
from __future__ import annotations

from runs import protocol
from runs.episode.scoring import scoring_item
from runs.failures import Call, Trajectory, classify
from runs.models import Episode, Step
from tools_app.errors import ErrorCode

Kind = Step.Kind

#: The code of a tool error whose object names none (the official runner's, but for output-too-large).
UNCODED = "error"

_STEP_FIELDS = (
    "index", "kind", "tool_name", "arguments", "error",
    "result__status", "result__action",
    "result__content__error", "result__content__error_code", "result__content__budget_tokens",
)  # fmt: skip


def classify_episode(episode: Episode) -> tuple[list[dict], float | None]:
    """The failure modes of ``episode`` as stored, ``[{"code", "steps": [index, ...]}, ...]``, and its
    evidence coverage (None for T1 or a record of unknown duration)."""
    modes, coverage = classify(trajectory_of(episode))
    return [{"code": mode.code, "steps": list(mode.steps)} for mode in modes], coverage


def trajectory_of(episode: Episode) -> Trajectory:
    """What the classification reads of ``episode``: its tool calls, its answer, how it ended, its instance."""
    rows = list(episode.steps.exclude(kind=Kind.PROMPT).order_by("index").values_list(*_STEP_FIELDS))
    instance = episode.instance
    task = instance.task.code
    answered = episode.final_answer is not None
    calls, accepted, last_answer_turn = [], None, None
    for index, kind, tool_name, arguments, error, status, action, content_error, content_code, budget in rows:
        if kind == Kind.TOOL_CALL and status != "not_executed":  # a stub answered a call that was not run
            calls.append(Call(
                index=index,
                tool=tool_name,
                arguments=arguments if isinstance(arguments, dict) else {},
                error_code=error_code(status=status, error=error, content_error=content_error,
                                      content_code=content_code, budget_tokens=budget),
            ))
        elif kind == Kind.FINAL_ANSWER:
            accepted = index
        elif kind == Kind.AGENT_MESSAGE and action == "final_answer":
            last_answer_turn = index
    # An accepted answer has its step; an invalid one the episode ended with is the last turn that gave one.
    answer_step = (accepted if accepted is not None else last_answer_turn) if answered else None
    item = scoring_item(instance, episode.prediction)
    return Trajectory(
        task=task,
        calls=tuple(calls),
        answer_step=answer_step,
        answered=answered,
        valid_answer=answer_is_valid(episode) if answered else None,
        ended_by=episode.ended_by,
        prediction=episode.prediction if answered else None,
        reference=dict(item.gold or {}),
        duration_sec=item.duration_sec,
        n_epochs=item.n_epochs or None,
        end_step=rows[-1][0] if rows else None,
    )


def error_code(*, status, error, content_error, content_code, budget_tokens) -> str | None:
    """The code of a tool call's error, None when the tool answered without one.

    Parameters
    ----------
    status : str | None
        The step's ``result.status``: ``ok``, ``tool_not_available``, or the official runner's ``error``
        (the tool raised).
    error : str
        The step's ``error`` (a tool that is not available, an imported observation's error).
    content_error, content_code, budget_tokens
        The ``error``, ``error_code`` and ``budget_tokens`` of the tool's result, None where absent.
    """
    if content_error is not None:
        if content_code:
            return str(content_code)
        return ErrorCode.OUTPUT_TOO_LARGE.value if budget_tokens is not None else UNCODED
    if status == "error":
        return ErrorCode.INTERNAL_ERROR.value
    if status not in (None, "", "ok"):
        return str(status)
    return UNCODED if error else None


def answer_is_valid(episode: Episode) -> bool:
    """Whether the episode's final answer passes the task's output schema, as the loop checks it, and the
    scorer read a label from it."""
    instance = episode.instance
    errors = protocol.final_answer_errors(
        episode.final_answer, instance.expected_output_schema, task=instance.task.code, n_epochs=instance.epochs_total
    )
    return not errors and (episode.scores or {}).get("predicted") != ""
