"""Template helpers of the leaderboard pages: number formats, JSON display, metric names, task codes."""
import json
from decimal import Decimal

from django import template

from benchmark.scoring import TASK_IDS
from leaderboard.formats import metric_name, p_value, score, signed

register = template.Library()
register.filter("metric_name", metric_name)
register.filter("score", score)
register.filter("signed", signed)
register.filter("p_value", p_value)


@register.simple_tag
def task_codes() -> tuple[str, ...]:
    """The six official task codes, in order."""
    return TASK_IDS


@register.filter
def public_episode_error(episode) -> str:
    """An episode's error as anyone but staff may read it: one line, no path, no provider's words."""
    from runs.redaction import public_episode_error as public

    return public(episode)


@register.filter
def spread(sd) -> str:
    """A standard deviation over epochs as ``± 0.085``; blank when there is none or it is 0.000 as shown."""
    if sd is None or sd == "":
        return ""
    shown = score(sd)
    return f"± {shown}" if float(shown) else ""


@register.filter
def percent(value, places: int = 1) -> str:
    if value is None:
        return "–"
    return f"{float(value) * 100:.{int(places)}f} %"


@register.filter
def usd(value) -> str:
    """A cost in US dollars: cents for amounts of a dollar or more, four significant decimals below."""
    if value is None:
        return "unpriced"
    amount = float(value) if not isinstance(value, Decimal) else float(value)
    if amount == 0:
        return "$0"
    if abs(amount) >= 1:
        return f"${amount:,.2f}"
    return f"${amount:.4f}"


@register.filter
def tokens(value) -> str:
    """A token count, shortened: 1234 → 1.2k, 3456789 → 3.46M."""
    if value is None:
        return "–"
    count = int(value)
    if count >= 1_000_000:
        return f"{count / 1_000_000:.2f}M"
    if count >= 10_000:
        return f"{count / 1_000:.0f}k"
    if count >= 1_000:
        return f"{count / 1_000:.1f}k"
    return str(count)


@register.filter
def seconds(value) -> str:
    """A duration: 42.3 s, 3 min 12 s, 1 h 05 min."""
    if value is None:
        return "–"
    total = float(value)
    if total < 60:
        return f"{total:.1f} s"
    minutes, rest = divmod(int(round(total)), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


@register.filter
def pretty_json(value) -> str:
    """JSON indented for reading; non-ASCII kept."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@register.filter
def compact_json(value, limit: int = 300) -> str:
    """JSON on one line, cut to ``limit`` characters with an ellipsis."""
    text = json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))
    limit = int(limit)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@register.filter
def get(mapping, key):
    """``mapping[key]``, or None (templates cannot index with a variable)."""
    if mapping is None:
        return None
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def millions(value) -> str:
    """A token count in millions: one decimal as the paper's Table 5 prints it, three below a million."""
    if value is None:
        return "–"
    amount = int(value) / 1_000_000
    return f"{amount:,.1f}" if amount >= 1 else f"{amount:.3f}"
