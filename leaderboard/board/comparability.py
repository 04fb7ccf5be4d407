"""Whether a run's scores are comparable with the paper's published rows, and if not, why.

The paper's models read the official package's texts, called their tools through the text
protocol with ``max_tokens`` 8192 at temperature 0 (the official runner's shipped agent configs),
on the official release. A run is comparable with them only when it was made the same way: the
official prompt set, the text protocol, 8192 tokens, temperature 0, on the official suite. The
leaderboard ranks comparable runs among the paper's rows; any other run on that board is shown
with a mark and the reasons below, and without a rank among them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmark.wording import OFFICIAL
from leaderboard.board.published import PAPER_BOARD
from runs.agents import is_baseline
from runs.model.agent import CONTROL_SETTINGS, PAPER_MAX_TOKENS, PAPER_PROTOCOL, PAPER_TEMPERATURE
from runs.models import Run

COMPARABLE = "comparable with the paper"
# The settings the comparability mark reads, beside the prompt set.
HOW_CALLED = ("tool_protocol", "max_tokens", "temperature")
# How a model is reached, which its scores do not depend on.
REACH_SETTINGS = CONTROL_SETTINGS - set(HOW_CALLED)


@dataclass(frozen=True)
class Comparability:
    """``comparable``, or the ``reasons`` why not (each a short phrase, e.g. "paraphrased prompts")."""

    reasons: tuple[str, ...]

    @property
    def comparable(self) -> bool:
        return not self.reasons

    @property
    def label(self) -> str:
        return COMPARABLE if self.comparable else "not comparable: " + "; ".join(self.reasons)

    def as_dict(self) -> dict:
        return {"comparable": self.comparable, "reasons": list(self.reasons)}


def how_called(run: Run) -> dict[str, str]:
    """The prompt set, tool protocol, max_tokens and temperature of ``run``, as text ("not recorded" if unknown)."""
    settings = run.settings or {}
    shown = {"prompt_set": run.prompt_set}
    for name in HOW_CALLED:
        value = settings.get(name)
        shown[name] = "not recorded" if value is None else str(value)
    return shown


def run_settings(run: Run) -> dict[str, Any]:
    """What ``run``'s scores depend on beside its model and suite: its prompt set, tool protocol,
    max_tokens and temperature (None when not recorded), and any other decoding setting it was given
    (``top_p``, ...); not how the model was reached (transport, timeout).

    Two runs of one model on one suite with equal settings repeat the same experiment.
    """
    given = {name: value for name, value in (run.settings or {}).items() if name not in REACH_SETTINGS}
    return {"prompt_set": run.prompt_set, **dict.fromkeys(HOW_CALLED), **dict(sorted(given.items()))}


def comparability(run: Run, *, suite=None) -> Comparability:
    """How ``run`` compares with the paper's rows (``suite``: the run's suite, if already loaded)."""
    suite = suite if suite is not None else run.suite
    reasons: list[str] = []
    if is_baseline(run.model.provider_model):
        reasons.append("a built-in baseline, not a model")
    elif run.source == Run.Source.EXTERNAL:
        reasons.append("an external agent, called with settings of its own")
    else:
        reasons += _setting_reasons(run)
    if suite.name != PAPER_BOARD or suite.release.is_synthetic:
        reasons.append("not the official suite")
    return Comparability(tuple(reasons))


def _setting_reasons(run: Run) -> list[str]:
    reasons = []
    if run.prompt_set != OFFICIAL:
        reasons.append("paraphrased prompts")
    settings = run.settings or {}
    protocol = settings.get("tool_protocol")
    if protocol is None:
        reasons.append("tool protocol not recorded" if run.source == Run.Source.IMPORTED else "tool protocol auto")
    elif protocol != PAPER_PROTOCOL:
        reasons.append(f"tool protocol {protocol}")
    for name, paper in (("max_tokens", PAPER_MAX_TOKENS), ("temperature", PAPER_TEMPERATURE)):
        value = settings.get(name)
        if value is None:
            reasons.append(f"{name} not recorded")
        elif value != paper:
            reasons.append(f"{name} {value} (the paper's: {paper})")
    return reasons
