"""How a baseline reads a tool result: the text a model reads, back into data.

A model reads a tool's result as the official runner prints it, under either prompt set: ``str()``
of the object the official tool returns (``tools_app.views``), a Python repr rather than JSON. Its
forms are Python literals (dicts, lists, strings, numbers, True, False, None) and one more: MNE's
named constants print as their number and name, ``'reference': 0 (FIFFV_MNE_CUSTOM_REF_OFF)``,
which is no literal. A result that is no object at all is the runner's own error text (a tool the
scenario does not allow). The baselines read exactly these forms, and refuse any other loudly
(:class:`UnreadableResult`), so that a change of what models read cannot leave a baseline
answering blind.
"""
from __future__ import annotations

import ast
from typing import Any

#: The prefix of every name of MNE's FIFF constants (``mne.io.constants.FIFF``).
MNE_CONSTANT_PREFIX = "FIFF"


class UnreadableResult(ValueError):
    """A tool result in none of the forms the official runner prints: a defect, never skipped."""


def read_tool_result(text: str) -> Any:
    """The data of a tool result as the model read it, without its ``[Tool Result]`` prefix.

    Parameters
    ----------
    text : str
        ``str()`` of a tool's result object, or the runner's error text.

    Returns
    -------
    dict
        The result object, with each MNE named constant as its number; for an error text that
        is no object, ``{"error": text}``.

    Raises
    ------
    UnreadableResult
        For a text that opens as an object but is none of the official forms.
    """
    text = text.strip()
    if not text.startswith("{"):
        return {"error": text}
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise UnreadableResult(f"A tool result is no Python repr ({exc.msg}): {text[:200]!r}") from None
    return _value(tree.body)


def _value(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, str | int | float | type(None)):
        return node.value
    if isinstance(node, ast.Dict) and all(isinstance(key, ast.Constant) for key in node.keys):
        return {_value(key): _value(value) for key, value in zip(node.keys, node.values)}
    if isinstance(node, ast.List | ast.Tuple):
        return [_value(item) for item in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        number = _value(node.operand)
        if isinstance(number, int | float) and not isinstance(number, bool):
            return -number if isinstance(node.op, ast.USub) else number
    if _is_named_constant(node):
        return node.func.value
    raise UnreadableResult(f"A tool result holds {ast.unparse(node)[:200]!r}, which no official tool prints.")


def _is_named_constant(node: ast.expr) -> bool:
    """Whether ``node`` is MNE's print of a named constant: its number, then its name in parentheses."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Constant)
        and type(node.func.value) is int
        and not node.keywords
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id.startswith(MNE_CONSTANT_PREFIX)
    )
