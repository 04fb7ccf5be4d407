"""What a model call costs, from its token counts: per call, per episode, and by the paper's formula.

Prices come from the model's ``ModelSpec`` when both its input and output prices are set,
otherwise from the price map bundled with litellm (never fetched: settings set
``LITELLM_LOCAL_MODEL_COST_MAP``). A model that neither prices is *unpriced*: its cost is
``None``, never 0. The built-in baselines run locally and cost exactly 0.

Token counts follow litellm's normalised usage, in which ``prompt_tokens`` counts every
input token, those read from and written to a prompt cache included. The call cost charges
each part at its own rate; the paper's estimate (§6.7, equation 9) charges all input tokens
at the standard input rate and ignores caching, and is given beside it.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from importlib import metadata

MILLION = Decimal(1_000_000)
COST_PLACES = Decimal("1e-8")  # the precision of the cost columns


@dataclass(frozen=True)
class TokenUsage:
    """Tokens of one model call; None where the provider did not say."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None

    def as_fields(self) -> dict[str, int | None]:
        """The counts under the names of the step and episode columns."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
        }

    @property
    def any_tokens(self) -> bool:
        return any(self.as_fields().values())


def _usd(value) -> Decimal:
    return Decimal(str(value)).quantize(COST_PLACES)


def _price(value) -> Decimal | None:
    return None if value is None else Decimal(str(value))


@dataclass(frozen=True)
class Pricing:
    """How one model's tokens are priced.

    Attributes
    ----------
    model : str
        The litellm model string, used to look prices up in litellm's map.
    source : {"model_spec", "litellm", "free", None}
        Where the prices come from; None means unpriced.
    input_per_mtok, output_per_mtok, cached_input_per_mtok : Decimal or None
        USD per million tokens, for ``source == "model_spec"``. Without a cached-input
        price, cache reads are charged at the input price; cache writes always are.
    map_rates : (Decimal, Decimal) or None
        The standard (input, output) USD-per-token rates of litellm's map, for
        ``source == "litellm"``: what the paper's estimate charges.
    """

    model: str = ""
    source: str | None = None
    input_per_mtok: Decimal | None = None
    output_per_mtok: Decimal | None = None
    cached_input_per_mtok: Decimal | None = None
    map_rates: tuple[Decimal, Decimal] | None = None

    @classmethod
    def free(cls) -> Pricing:
        return cls(source="free")

    @classmethod
    def for_model(cls, spec) -> Pricing:
        """Pricing of a ``benchmark.models.ModelSpec``: its own prices, else litellm's, else unpriced.

        litellm's rates are read from those the spec keeps (``ModelSpec.litellm_rates``) when they
        were taken from the installed litellm's map, so that pages price a model without loading
        litellm; else from the map itself.
        """
        if spec.input_price_per_mtok is not None and spec.output_price_per_mtok is not None:
            return cls(
                model=spec.provider_model,
                source="model_spec",
                input_per_mtok=_price(spec.input_price_per_mtok),
                output_per_mtok=_price(spec.output_price_per_mtok),
                cached_input_per_mtok=_price(spec.cached_input_price_per_mtok),
            )
        rates = litellm_rates(spec.provider_model, kept=spec.litellm_rates)
        if rates is not None:
            return cls(model=spec.provider_model, source="litellm", map_rates=rates)
        return cls(model=spec.provider_model)

    @property
    def is_priced(self) -> bool:
        return self.source is not None

    def call_cost(self, usage: TokenUsage | None) -> Decimal | None:
        """USD cost of one call; None when unpriced or when the call reported no usage."""
        if not self.is_priced or usage is None:
            return None
        if self.source == "free":
            return Decimal(0).quantize(COST_PLACES)
        prompt = usage.prompt_tokens or 0
        completion = usage.completion_tokens or 0
        cache_read = usage.cache_read_tokens or 0
        cache_write = usage.cache_write_tokens or 0
        if self.source == "litellm":
            import litellm

            input_cost, output_cost = litellm.cost_per_token(
                model=self.model,
                prompt_tokens=prompt,
                completion_tokens=completion,
                cache_read_input_tokens=cache_read,
                cache_creation_input_tokens=cache_write,
            )
            return _usd(input_cost + output_cost)
        cached_rate = self.cached_input_per_mtok
        if cached_rate is None:
            cached_rate = self.input_per_mtok
        uncached = max(prompt - cache_read, 0)  # cache writes are charged at the input price
        total = uncached * self.input_per_mtok + cache_read * cached_rate + completion * self.output_per_mtok
        return (total / MILLION).quantize(COST_PLACES)

    def paper_cost(self, prompt_tokens: int, completion_tokens: int) -> Decimal | None:
        """The paper's estimate (§6.7): every input token at the standard input rate, plus the output.

        Linear in the counts, so it applies to one call, an episode or a whole run alike.
        """
        if self.source == "free":
            return Decimal(0).quantize(COST_PLACES)
        if self.source == "model_spec":
            rates = (self.input_per_mtok / MILLION, self.output_per_mtok / MILLION)
        elif self.source == "litellm":
            rates = self.map_rates or litellm_rates(self.model)
        else:
            return None
        if rates is None:
            return None
        input_rate, output_rate = rates
        return _usd(Decimal(prompt_tokens or 0) * input_rate + Decimal(completion_tokens or 0) * output_rate)


@cache
def litellm_model_info(model: str) -> dict | None:
    """``model``'s entry in litellm's bundled model map, or None when the map does not list it.

    The map is the one bundled with litellm, never fetched, so it is looked up once per model
    (an unlisted model takes litellm a fraction of a millisecond to rule out, for every episode).
    Callers must not change the entry.
    """
    import litellm

    try:
        return litellm.get_model_info(model)
    except Exception:  # litellm raises its own and generic errors for a model it does not know
        return None


def litellm_rates(model: str, *, kept: Mapping | None = None) -> tuple[Decimal, Decimal] | None:
    """The standard (input, output) USD-per-token rates of ``model`` in litellm's bundled map, or None.

    ``kept`` is what :func:`kept_litellm_rates` gave earlier; when it was taken for this model from
    the installed litellm's map it is the answer, and litellm is not loaded.
    """
    if kept and kept.get("model") == model and kept.get("litellm") == installed_litellm_version():
        if kept.get("input") is None or kept.get("output") is None:
            return None
        return Decimal(kept["input"]), Decimal(kept["output"])
    info = litellm_model_info(model)
    if info is None:
        return None
    input_rate, output_rate = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if input_rate is None or output_rate is None:
        return None
    return _price(input_rate), _price(output_rate)


@cache
def installed_litellm_version() -> str | None:
    """The installed litellm's version, read from its package metadata (litellm itself is not loaded)."""
    try:
        return metadata.version("litellm")
    except metadata.PackageNotFoundError:
        return None


def kept_litellm_rates(model: str) -> dict:
    """``model``'s standard rates in litellm's map, with the model and litellm version they hold for.

    What ``ModelSpec.litellm_rates`` keeps (rates as strings, None for a model the map does not
    price), so that a process that shows costs need not load litellm (3 s and 100 MB) to read them.
    """
    rates = litellm_rates(model)
    return {
        "model": model,
        "litellm": installed_litellm_version(),
        "input": None if rates is None else str(rates[0]),
        "output": None if rates is None else str(rates[1]),
    }


def total_cost(costs: Iterable[Decimal | None], *, priced: bool) -> Decimal | None:
    """The sum of a set of call costs; None when the model is unpriced.

    Calls that cost None while the model is priced reported no usage (a refused or timed-out
    request) and add nothing.
    """
    if not priced:
        return None
    return sum((cost for cost in costs if cost is not None), Decimal(0)).quantize(COST_PLACES)
