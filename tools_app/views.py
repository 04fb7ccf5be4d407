"""A tool result as a model reads it.

A stored result is plain JSON data. The official runner sends the model ``str()`` of the object its
tool returned (a Python repr, not JSON), and that object differs from our JSON data where it is
printed in two places:

- ``get_recording_info``'s ``reference`` is MNE's named constant, so it prints as
  ``0 (FIFFV_MNE_CUSTOM_REF_OFF)`` where the number prints as ``0``;
- an error object has none of our additions (kept in the stored result for the pages and the API):
  ``error_code``, and a windowed refusal's ``range_sec`` and ``record_sec``.

:func:`model_view` turns a stored result into the object the official tool would have returned;
``str()`` of it is the text the official runner sends. Nothing else changes: the ``_meta`` sizes
are already the official ones (``json.dumps`` prints MNE's named constant as its number).
"""

# What we add to the official error objects (an error code to each, two lengths to the windowed refusal,
# tools_app.budget); a model reads the objects without them, under either prompt set.
ERROR_ADDITIONS = frozenset({"error_code", "range_sec", "record_sec"})
# MNE's names of the custom-reference flag (mne.io.constants.FIFF.FIFFV_MNE_CUSTOM_REF_*).
CUSTOM_REFERENCE_NAMES = {0: "FIFFV_MNE_CUSTOM_REF_OFF", 1: "FIFFV_MNE_CUSTOM_REF_ON", 2: "FIFFV_MNE_CUSTOM_REF_CSD"}


class NamedFlag(int):
    """An int that prints as MNE's named constants do (``0 (FIFFV_MNE_CUSTOM_REF_OFF)``)."""

    def __new__(cls, value: int, name: str):
        flag = super().__new__(cls, value)
        flag.name = name
        return flag

    def __repr__(self) -> str:
        return f"{int(self)} ({self.name})"

    __str__ = __repr__


def model_view(tool_name: str, content):
    """The object the official tool returns for our stored result ``content`` of ``tool_name``."""
    if not isinstance(content, dict):
        return content
    view = content
    if "error" in content:
        view = {key: value for key, value in content.items() if key not in ERROR_ADDITIONS}
    reference = view.get("reference")
    if tool_name == "get_recording_info" and type(reference) is int and reference in CUSTOM_REFERENCE_NAMES:
        view = {**view, "reference": NamedFlag(reference, CUSTOM_REFERENCE_NAMES[reference])}
    return view


def result_text(tool_name: str, content, error: str | None = None) -> str:
    """The text of a tool's result as the official runner sends it: the repr of the result, or the error."""
    view = model_view(tool_name, content)
    return str(view) if view else (error or "")
