"""Which way a model is called (litellm or direct HTTP) and with which tool protocol.

Also the checks on a run's model settings: the key's variable, the API base, the transport.
"""
from __future__ import annotations

import re
from functools import cache
from urllib.parse import urlsplit

from runs.cost import litellm_model_info
from runs.model import openai_http

PROTOCOLS = ("native", "text")
TRANSPORTS = ("litellm", "direct")
# The variable litellm reads a provider's key from when a run names none.
PROVIDER_KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "hosted_vllm": "HOSTED_VLLM_API_KEY"}


# What a run may never name as its key: the platform's own settings (their values would be sent as a
# bearer key to the server the run names).
PLATFORM_VARIABLES = frozenset({"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "ALLOWED_HOSTS", "DEBUG"})
PLATFORM_PREFIXES = ("EEGAB_", "DJANGO_")


def check_key_env(name: str) -> None:
    """Refuse a key variable a run may not name (ValueError); a blank name is the provider's default."""
    from django.conf import settings

    if not name:
        return
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):  # not echoed: it may be the key itself
        raise ValueError("Give the name of the environment variable that holds the key, not the key.")
    if name in PLATFORM_VARIABLES or name.startswith(PLATFORM_PREFIXES):
        raise ValueError(f"{name} is a setting of the platform, not a model's API key.")
    allowed = list(settings.EEGAB_PROVIDER_KEY_ENVS)
    if name not in allowed:
        raise ValueError(
            f"{name} is not a key variable runs may name; the allowed ones are {', '.join(allowed)} "
            "(the EEGAB_PROVIDER_KEY_ENVS setting)."
        )


def check_api_base(url: str) -> None:
    """Refuse an API base with credentials in it (ValueError, which does not repeat them)."""
    if url and (urlsplit(url).username is not None or urlsplit(url).password is not None):
        raise ValueError("The API base may not hold credentials (user:password@); name the key's variable instead.")


def check_transport(model: str, api_base: str | None, requested: str | None = "auto") -> None:
    """Raise ValueError unless ``requested`` is a transport ``model`` at ``api_base`` can use.

    The direct transport speaks the OpenAI format to an ``api_base``, so it needs one and a
    model under the ``openai/`` or ``hosted_vllm/`` prefix.
    """
    if requested not in (*TRANSPORTS, "auto", "", None):
        raise ValueError(f"transport must be 'auto', 'litellm' or 'direct', not {requested!r}.")
    if requested != "direct":
        return
    if not model.startswith(openai_http.PROVIDER_PREFIXES):
        prefixes = " or ".join(openai_http.PROVIDER_PREFIXES)
        raise ValueError(f"The direct transport needs a model under {prefixes} (an OpenAI-compatible server), "
                         f"not {model!r}.")  # fmt: skip
    if not api_base:
        raise ValueError(f"The direct transport needs the --api-base of the server that serves {model}.")
    problem = openai_http.api_base_problem(api_base)
    if problem:
        raise ValueError(problem)


def choose_transport(model: str, api_base: str | None, requested: str = "auto") -> str:
    """``litellm`` or ``direct``: as requested, else direct for a self-hosted OpenAI-compatible model.

    A model is self-hosted when it is served at an ``api_base`` under the ``openai/`` or
    ``hosted_vllm/`` prefix and litellm's model map does not list it (``openai/Qwen3-8B``
    on a vLLM server, say); litellm would only pass its requests through. Every other model
    (a provider's own API, or a listed model such as ``openai/gpt-5`` at a proxy, whose
    parameters litellm adapts) goes through litellm.
    """
    check_transport(model, api_base, requested)
    if requested in TRANSPORTS:
        return requested
    if not api_base or not model.startswith(openai_http.PROVIDER_PREFIXES):
        return "litellm"
    return "litellm" if litellm_model_info(model) is not None else "direct"


def choose_protocol(model: str, requested: str = "auto") -> str:
    """``native`` or ``text``: as requested, else native where litellm says the model calls functions."""
    if requested in PROTOCOLS:
        return requested
    if requested not in ("auto", "", None):
        raise ValueError(f"tool_protocol must be 'auto', 'native' or 'text', not {requested!r}.")
    return "native" if _calls_functions(model) else "text"


@cache
def _calls_functions(model: str) -> bool:
    """Whether litellm's bundled model map says ``model`` supports native function calling."""
    import litellm

    try:
        return bool(litellm.supports_function_calling(model))
    except Exception:  # litellm raises for model strings it cannot map to a provider
        return False
