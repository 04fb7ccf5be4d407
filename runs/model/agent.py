"""``ModelAgent``: any model litellm can call, priced, with the platform's single retry layer."""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from runs.cost import Pricing
from runs.model import litellm_transport, openai_http
from runs.model.reply import FailedAttempt, ProviderError, Reply, attr, failure_text, text_of, usage_of
from runs.model.retry import CONTEXT, TRANSIENT, RetryPolicy, fitted_max_tokens
from runs.model.routing import (
    PROVIDER_KEY_VARIABLES, check_key_env, check_model_host, choose_protocol, choose_transport,
)

# What a run must have been made with to be comparable with the paper's published rows: the
# settings of the official runner's shipped agent configs (configs/agents/*.yaml upstream).
PAPER_PROTOCOL = "text"
PAPER_MAX_TOKENS = 8192
PAPER_TEMPERATURE = 0
# Run.settings keys that steer the adapter; all other keys are passed to the model as decoding settings.
CONTROL_SETTINGS = frozenset({"tool_protocol", "transport", "timeout_sec"})


class ModelAgent:
    """Any model litellm can call, with the platform's single retry layer.

    Parameters
    ----------
    model : str
        litellm model string, e.g. ``openai/gpt-4o``.
    api_base : str, optional
    api_key_env : str
        Name of the environment variable holding the key; blank means the provider's usual
        variable (``OPENAI_API_KEY`` for ``openai/``), as litellm reads it.
    settings : dict
        The run's settings: decoding settings passed to the model (``temperature`` 0 and
        ``max_tokens`` 8192 unless given, as the official runner's shipped configs), plus
        ``tool_protocol`` (text unless given, as there; native, or auto: native where litellm
        says the model calls functions),
        ``transport`` (auto, litellm or direct: ``choose_transport``) and ``timeout_sec``
        for each request.
    pricing : Pricing
    retry : RetryPolicy
    sleep : callable
        Waits between retries (tests pass a recorder).
    allowed_hosts_only : bool
        Send no request (and so no key) unless ``api_base`` passes ``check_model_host`` at the
        time of the call: for runs made on the staff form, which was held to it.
    """

    def __init__(
        self,
        *,
        model: str,
        api_base: str | None = None,
        api_key_env: str = "",
        settings: dict | None = None,
        pricing: Pricing | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        allowed_hosts_only: bool = False,
    ):
        settings = dict(settings or {})
        self.model = model
        self.api_base = api_base or None
        self.api_key_env = api_key_env
        self.protocol = choose_protocol(model, settings.get("tool_protocol", PAPER_PROTOCOL))
        self.transport = choose_transport(model, self.api_base, settings.get("transport", "auto"))
        self.timeout_sec = float(settings.get("timeout_sec", openai_http.DEFAULT_TIMEOUT_SEC))
        self.decoding = {"temperature": PAPER_TEMPERATURE, "max_tokens": PAPER_MAX_TOKENS} | {
            key: value for key, value in settings.items() if key not in CONTROL_SETTINGS
        }
        self.pricing = pricing or Pricing(model=model)
        self.retry = retry or RetryPolicy()
        self.sleep = sleep
        self.allowed_hosts_only = allowed_hosts_only

    def _api_key(self) -> str | None:
        try:  # a run made before the allowed names or hosts changed is held to them too
            check_key_env(self.api_key_env)
            if self.allowed_hosts_only:
                check_model_host(self.api_base or "")
        except ValueError as exc:
            raise ProviderError(str(exc)) from None
        if not self.api_key_env:
            if self.transport == "direct":  # litellm reads the provider's usual variable itself
                return os.environ.get(PROVIDER_KEY_VARIABLES[self.model.split("/", 1)[0]]) or None
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ProviderError(
                f"The environment variable {self.api_key_env} (the API key of {self.model}) is not set."
            )
        return key

    def _transport(self):
        """The module that calls the model (``complete``) and sorts its errors (``classify``)."""
        return openai_http if self.transport == "direct" else litellm_transport

    def _complete(self, request: dict) -> Any:
        return self._transport().complete(request)

    def _request(self, messages: list[dict], tools: list[dict] | None) -> dict:
        request = {
            "model": self.model,
            "messages": messages,
            **self.decoding,
            "api_base": self.api_base,
            "api_key": self._api_key(),
            "timeout": self.timeout_sec,
            "num_retries": 0,  # litellm's retries off …
            "max_retries": 0,  # … and the provider SDK's: this adapter is the only retry layer
            "drop_params": True,  # a setting the provider does not take is dropped, not fatal
        }
        if tools is not None:
            request["tools"] = tools
            request["tool_choice"] = "auto"
        return request

    def _back_off(self, delays, message: str, failed: list[FailedAttempt]) -> None:
        """Wait before the next retry, or raise when no retry is left."""
        delay = next(delays, None)
        if delay is None:
            raise ProviderError(message, attempts=tuple(failed))
        self.sleep(delay)

    def respond(self, messages: list[dict], *, tools: list[dict] | None = None) -> Reply:
        request = self._request(messages, tools)
        failed: list[FailedAttempt] = []
        delays = self.retry.delays()
        context_retried = False
        while True:
            started = time.monotonic()
            try:
                response = self._complete(request)
            except Exception as exc:  # every failure of the call is classified below
                latency = (time.monotonic() - started) * 1000
                failure = failure_text(exc)
                failed.append(FailedAttempt(error=failure, latency_ms=latency))
                kind = self._transport().classify(exc)
                if kind == CONTEXT:
                    budget = int(request["max_tokens"])
                    fitted = None if context_retried else fitted_max_tokens(str(exc), budget)
                    if fitted is None:
                        raise ProviderError(failure, attempts=tuple(failed), context_exceeded=True) from exc
                    request = {**request, "max_tokens": fitted}
                    context_retried = True
                    continue
                if kind != TRANSIENT:
                    raise ProviderError(failure, attempts=tuple(failed)) from exc
                self._back_off(delays, failure, failed)
                continue

            latency = (time.monotonic() - started) * 1000
            usage = usage_of(response)
            choices = attr(response, "choices") or []
            message = attr(choices[0], "message") if choices else None
            if message is None:
                failed.append(
                    FailedAttempt(
                        error="the provider returned no choices",
                        latency_ms=latency,
                        usage=usage,
                        cost_usd=self.pricing.call_cost(usage),
                    )
                )
                self._back_off(delays, "The provider returned no choices after all retries.", failed)
                continue
            return Reply(
                content=text_of(attr(message, "content")),
                reasoning=text_of(attr(message, "reasoning_content") or attr(message, "reasoning")),
                tool_calls=tuple(
                    (attr(call, "id") or "", attr(call, "function", "name") or "",
                     attr(call, "function", "arguments") or "")
                    for call in (attr(message, "tool_calls") or ())
                ),  # fmt: skip
                usage=usage,
                cost_usd=self.pricing.call_cost(usage),
                latency_ms=latency,
                failed_attempts=tuple(failed),
                finish_reason=attr(choices[0], "finish_reason") or "",
            )
