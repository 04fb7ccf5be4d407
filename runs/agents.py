"""Choosing the agent of a run: a model (``runs.model``) or one of the built-in baselines (``runs.baselines``)."""
from __future__ import annotations

from runs.baselines.heuristic import HeuristicAgent
from runs.baselines.random import RandomAgent
from runs.cost import Pricing
from runs.model.agent import ModelAgent
from runs.model.reply import Agent
from runs.model.retry import RetryPolicy

BASELINE_RANDOM = "baseline/random"
BASELINE_HEURISTIC = "baseline/heuristic"

BASELINES = {BASELINE_RANDOM: RandomAgent, BASELINE_HEURISTIC: HeuristicAgent}
# The families, and provider models' prefixes, of the agents the platform does not call: a person
# on the play pages (``human/<username>``), an agent driving the environment API (``external/<name>``).
HUMAN_FAMILY = "human"
EXTERNAL_FAMILY = "external"


def is_baseline(model: str) -> bool:
    return model.startswith("baseline/")


def is_human(model: str) -> bool:
    return model.startswith(f"{HUMAN_FAMILY}/")


def free_of_charge(model: str) -> str:
    """Why a run of ``model`` costs nothing, in words; "" for a model, whose tokens are priced or unpriced."""
    if is_baseline(model):
        return "a built-in baseline calls no model"
    if is_human(model):
        return "played by a person: no model is called"
    return ""


def build_agent(
    run, instance, *, record_id: str | None = None, epoch: int = 0, retry: RetryPolicy | None = None
) -> Agent:
    """The agent of ``run`` for one episode on ``instance``, whose record id is ``record_id``, in ``epoch``.

    Baselines are given the instance as an agent may see it (``Instance.to_dict()``: the
    metadata and output schema the prompt shows, never the reference) with the episode's record id.
    """
    model = run.model.provider_model
    if is_baseline(model):
        if model not in BASELINES:
            raise ValueError(f"Unknown baseline {model!r}; the baselines are {', '.join(BASELINES)}.")
        visible = {**instance.to_dict(), "record_id": record_id or instance.record_id}
        if model == BASELINE_RANDOM:
            return RandomAgent(visible, seed=int((run.settings or {}).get("seed", 0)) + epoch)
        return HeuristicAgent(visible)
    return ModelAgent(
        model=model,
        api_base=run.api_base,
        api_key_env=run.api_key_env,
        settings=run.settings,
        pricing=Pricing.for_model(run.model),
        retry=retry or RetryPolicy.from_settings(),
        # A run a user made (the staff form) is held to the allowed model hosts as it is played too;
        # one from the command line (no user) is not.
        allowed_hosts_only=run.created_by_id is not None,
    )
