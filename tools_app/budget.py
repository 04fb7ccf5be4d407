"""Output size: the ``_meta`` block of every result and the 8,000-token output budget.

The budget is the official rule of ``compute_windowed_features``: estimate the response
size from a representative row before computing anything, and refuse the call, with
numbers that tell the agent how to rescope, when the estimate exceeds 8,000 tokens at
4 bytes per token. The same rule (same limit, same kind of message and fields) guards the
other tools whose output grows with their arguments: the channel correlation (quadratic in
channels) and the per-channel tools (which accept repeated channel names).

The official windowed refusal says "(record is {L}s long)" with L the length of the range the call
asked for, not of the record (upstream's ``total_sec``): a call with tmax 4080 on a 30,900-s night is
told the record is 4080.0 s long. The stored refusal keeps that text, which the official prompt set
sends as it is, and adds ``range_sec`` and ``record_sec``; :func:`with_true_lengths` gives the text
with both lengths, as the platform prompt set and the trajectory explorer say it.
"""
import json
from collections import Counter

from tools_app.errors import ErrorCode, ToolError

BUDGET_TOKENS = 8000
BYTES_PER_TOKEN = 4
BUDGET_BYTES = BUDGET_TOKENS * BYTES_PER_TOKEN

#: Stand-in for any number in a size estimate (the official windowed estimate's value).
PLACEHOLDER_NUMBER = -12.3456


def response_bytes(body):
    """Return the size the official ``_meta`` reports: the JSON text length of ``body``."""
    return len(json.dumps(body, ensure_ascii=False, default=str))


def attach_meta(body, *, n_rows=None, truncated=False, truncated_reason=None):
    """Return ``body`` with the ``_meta`` size block as its first key.

    Parameters
    ----------
    body : dict
        The tool's result, without ``_meta``.
    n_rows : int, optional
        The result's natural row count, when it has one.
    truncated : bool
        Whether the tool dropped part of its output.
    truncated_reason : str, optional
        Why, in words; omitted when empty.

    Returns
    -------
    result : dict
        ``{"_meta": {approx_response_bytes, approx_response_kb, approx_response_tokens,
        truncated[, n_rows][, truncated_reason]}, **body}``. The sizes measure ``body`` alone.
    """
    size = response_bytes(body)
    meta = {
        "approx_response_bytes": size,
        "approx_response_kb": round(size / 1024, 1),
        "approx_response_tokens": size // BYTES_PER_TOKEN,
        "truncated": bool(truncated),
    }
    if n_rows is not None:
        meta["n_rows"] = int(n_rows)
    if truncated_reason:
        meta["truncated_reason"] = str(truncated_reason)
    return {"_meta": meta, **body}


# ---------------------------------------------------------------------- windowed features

def windowed_row_bytes(features):
    """Return the official per-row size estimate for the given feature names."""
    row = {name: PLACEHOLDER_NUMBER for name in sorted(features)}
    row["t_start"] = 0.0
    row["t_end"] = 0.0
    return len(json.dumps(row)) + 2


def windowed_estimate_tokens(n_channels, n_windows, features):
    """Return the official token estimate of a windowed-features response."""
    estimated_bytes = n_windows * n_channels * windowed_row_bytes(features) + 60 * n_channels
    return estimated_bytes // BYTES_PER_TOKEN


def _length_clause(range_sec, record_sec=None):
    """The windowed refusal's words on lengths, for lengths already rounded to 0.1 s.

    Without ``record_sec``, the official words, which give the analysed range's length as the
    record's: ``(record is 4080.0s long)``; with it, both lengths as they are.
    """
    if record_sec is None:
        return f"(record is {float(range_sec)}s long)"
    return f"(the range asked for is {float(range_sec)}s long, of a {float(record_sec)}s record)"


def with_true_lengths(content):
    """``content`` with the record's true length beside the range's in a windowed refusal's text.

    Any other content (a result, another error, a refusal stored before ``record_sec`` was) is
    returned as it is.
    """
    if not isinstance(content, dict) or not isinstance(content.get("error"), str):
        return content
    range_sec, record_sec = content.get("range_sec"), content.get("record_sec")
    if not isinstance(range_sec, int | float) or not isinstance(record_sec, int | float):
        return content
    true_text = content["error"].replace(_length_clause(range_sec), _length_clause(range_sec, record_sec))
    return {**content, "error": true_text}


def check_windowed(*, n_channels, n_windows, features, step_sec, span_sec, record_sec):
    """Refuse a windowed-features call whose estimate exceeds the budget, as upstream does.

    Parameters
    ----------
    n_channels, n_windows : int
    features : iterable of str
        The valid requested feature names.
    step_sec : float
        The requested hop, s (used to suggest a time span).
    span_sec : float
        Length of the analysed range, s (the message calls it the record length, as upstream).
    record_sec : float
        Length of the record, s (``n_times / sfreq``, as the tools' other error texts give it).

    Raises
    ------
    ToolError
        ``output_too_large`` with ``budget_tokens``, ``estimated_tokens``, ``n_channels`` and
        ``n_windows``, as upstream, then ours: ``range_sec`` and ``record_sec`` (0.1 s), which the
        official text confuses (:func:`with_true_lengths`).
    """
    estimated = windowed_estimate_tokens(n_channels, n_windows, features)
    if estimated <= BUDGET_TOKENS:
        return
    max_rows = max(1, BUDGET_BYTES // windowed_row_bytes(features))
    max_windows = max(1, max_rows // n_channels)
    max_channels = max(1, max_rows // max(n_windows, 1))
    message = (
        f"Output too large: this call would return {n_channels} channels x {n_windows} windows = "
        f"{n_channels * n_windows} rows (~{int(estimated)} tokens), exceeding the {BUDGET_TOKENS}-token "
        f"budget. Nothing was computed. Rescope to fit, e.g.: (a) use <= {max_channels} channel(s) at the "
        f"current time span; or (b) keep <= {max_windows} windows by limiting the time range to a "
        f"<= {round(max_windows * step_sec, 1)}s chunk via tmin/tmax {_length_clause(round(span_sec, 1))}; "
        f"or (c) use a coarser window_sec / step_sec. Then call again on the chunk."
    )
    raise ToolError(
        ErrorCode.OUTPUT_TOO_LARGE,
        message,
        budget_tokens=BUDGET_TOKENS,
        estimated_tokens=int(estimated),
        n_channels=n_channels,
        n_windows=n_windows,
        range_sec=round(span_sec, 1),
        record_sec=round(record_sec, 1),
    )


# ---------------------------------------------------------------------- other tools

def check_channel_rows(header, names, fields):
    """Refuse a per-channel result whose estimated size exceeds the budget.

    Parameters
    ----------
    header : dict
        The result's fixed fields, with placeholder values.
    names : list of str
        The requested channels, repeats included: one row each.
    fields : dict
        A row's fields after ``channel``, with :data:`PLACEHOLDER_NUMBER` for numbers.

    Raises
    ------
    ToolError
        ``output_too_large`` with ``budget_tokens``, ``estimated_tokens`` and ``n_channels``.

    Notes
    -----
    Rows differ only in their channel name, so each distinct name is sized once, and the
    rows that fit are counted only up to the first that does not.
    """
    fixed = response_bytes(header)
    size_of = {name: response_bytes({"channel": name, **fields}) + 2 for name in dict.fromkeys(names)}
    estimated = (fixed + sum(size_of[name] * count for name, count in Counter(names).items())) // BYTES_PER_TOKEN
    if estimated <= BUDGET_TOKENS:
        return
    total, fitting = fixed, 0
    for name in names:
        total += size_of[name]
        if total > BUDGET_BYTES:
            break
        fitting += 1
    raise ToolError(
        ErrorCode.OUTPUT_TOO_LARGE,
        f"Output too large: this call would return {len(names)} channel rows (~{estimated} tokens), exceeding "
        f"the {BUDGET_TOKENS}-token budget. Nothing was computed. Rescope to fit, e.g.: use <= {max(1, fitting)} "
        f"channel(s) per call (each channel once), splitting the channel list across calls. Then call again.",
        budget_tokens=BUDGET_TOKENS,
        estimated_tokens=estimated,
        n_channels=len(names),
    )


def correlation_estimate_bytes(channel_names):
    """Return the estimated response size of a correlation over ``channel_names``, bytes.

    Every correlation is sized as ``-0.1234``, the longest a 4-dp value in [-1, 1] can be.
    """
    return _correlation_sizes(list(channel_names))[-1]


def _correlation_sizes(channel_names):
    """Return the estimated size of a correlation over the first k channels, for k = 0..n.

    A pair row is a fixed skeleton plus both names, a summary row a skeleton plus one name,
    so the sizes follow from the names' JSON lengths without serialising every pair.
    """
    header = response_bytes({"record_id": "", "time_window": [PLACEHOLDER_NUMBER, PLACEHOLDER_NUMBER],
                             "n_channels": 0, "channel_names": [], "n_pairs": 0, "pairs": [],
                             "channel_summary": []})
    pair_skeleton = response_bytes({"channel_a": "", "channel_b": "", "correlation": -0.1234}) + 2
    summary_skeleton = response_bytes({"channel": "", "mean_abs_correlation": 0.1234}) + 2
    sizes = [header]
    names_length = 0
    for count, name in enumerate(channel_names):
        length = len(json.dumps(name, ensure_ascii=False)) - 2
        new_pairs = count * pair_skeleton + count * length + names_length
        sizes.append(sizes[-1] + new_pairs + summary_skeleton + length + (length + 4))
        names_length += length
    return sizes


def check_correlation(channel_names):
    """Refuse a correlation whose estimated size exceeds the budget.

    Raises
    ------
    ToolError
        ``output_too_large`` with ``budget_tokens``, ``estimated_tokens``, ``n_channels``
        and ``n_pairs``.
    """
    sizes = _correlation_sizes(list(channel_names))
    estimated = sizes[-1] // BYTES_PER_TOKEN
    if estimated <= BUDGET_TOKENS:
        return
    fitting = max(2, max(count for count, size in enumerate(sizes) if size <= BUDGET_BYTES))
    n_channels = len(sizes) - 1
    n_pairs = n_channels * (n_channels - 1) // 2
    raise ToolError(
        ErrorCode.OUTPUT_TOO_LARGE,
        f"Output too large: this call would return {n_channels} channels = {n_pairs} channel pairs "
        f"(~{estimated} tokens), exceeding the {BUDGET_TOKENS}-token budget. Nothing was computed. Rescope to "
        f"fit, e.g.: pass a focused subset of <= {fitting} channels via channels (the output grows with the "
        f"square of the channel count). Then call again.",
        budget_tokens=BUDGET_TOKENS,
        estimated_tokens=estimated,
        n_channels=n_channels,
        n_pairs=n_pairs,
    )
