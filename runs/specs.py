"""Model specs of the models a run names: checking a model string, and finding or creating its ``ModelSpec``."""
from __future__ import annotations

from django.core.exceptions import ValidationError

from benchmark.models import ModelSpec
from runs.agents import BASELINES, is_baseline


def check_model(model: str) -> None:
    """Raise ValueError unless ``model`` is a built-in baseline or a model string litellm can route."""
    if is_baseline(model):
        if model not in BASELINES:
            raise ValueError(f"Unknown baseline {model!r}; the built-in agents are {', '.join(BASELINES)}.")
        return
    import litellm

    litellm.suppress_debug_info = True
    try:
        litellm.get_llm_provider(model)
    except Exception:  # litellm raises its own error types for strings it cannot route
        raise ValueError(
            f"Unknown model {model!r}: give a litellm model string with its provider, e.g. "
            f"openai/gpt-4o or openai/<name> with --api-base, or one of {', '.join(BASELINES)}."
        ) from None


def model_spec_for(model: str, *, name: str = "") -> ModelSpec:
    """The ``ModelSpec`` of a model string, created when there is none.

    With ``name`` the spec of that display name (which must run ``model``; one that has no model
    string yet, as the paper's models are imported, is given ``model`` and runs it from now on);
    without it, the spec named after the model string, else an existing spec of the model, else a
    new one named after the model string.
    """
    check_model(model)
    if name:
        spec = ModelSpec.objects.filter(name=name).first()
        if spec is not None and not spec.provider_model:
            spec.provider_model = model
            spec.save(update_fields=["provider_model"])
        if spec is not None and spec.provider_model != model:
            raise ValueError(f"The model name {name!r} is already used for {spec.provider_model}.")
    else:
        spec = (
            ModelSpec.objects.filter(name=model).first()
            or ModelSpec.objects.filter(provider_model=model).order_by("id").first()
        )
        if spec is not None and spec.provider_model != model:
            raise ValueError(f"The model name {model!r} is already used for {spec.provider_model}; give --name.")
    if spec is not None:
        return spec
    baseline = is_baseline(model)
    return new_model_spec(
        name=name or model,
        provider_model=model,
        family="baseline" if baseline else "",
        is_open_weight=True if baseline else None,
        notes="Built-in agent of the platform; runs locally and costs nothing." if baseline else "",
    )


def spec_to_run(chosen: ModelSpec | None, model: str) -> ModelSpec:
    """The spec a run is made of: ``chosen`` (given ``model`` when it has no model string yet), else ``model``'s.

    Raises ValueError as ``model_spec_for`` does: a string no provider routes, or ``chosen`` running another.
    """
    if chosen is None:
        return model_spec_for(model)
    return model_spec_for(model or chosen.provider_model, name=chosen.name)


def new_model_spec(**fields) -> ModelSpec:
    """Store a new ``ModelSpec``; ValueError naming each field that does not fit (too long, name taken)."""
    spec = ModelSpec(**fields)
    try:
        spec.full_clean()
    except ValidationError as exc:
        raise ValueError("; ".join(f"{field}: {' '.join(errors)}" for field, errors in exc.message_dict.items()))
    spec.save()
    return spec
