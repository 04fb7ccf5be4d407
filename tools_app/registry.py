"""The tool registry: typed tool functions, their schemas and text reference, and dispatch.

A tool is a function ``tool(recording, record_id, **options) -> dict`` registered with
:func:`tool`. Its JSON schema (for native function calling) and its entry in the text
protocol's tool reference are generated from the signature and the numpydoc docstring:
the text before the ``Parameters`` section is the tool's description, each parameter's
indented text its description, and the annotations give the JSON types. Nothing about a
tool is written twice.

:func:`call_tool` is the one entry point that runs a tool for an episode: it checks the
record id, validates argument types, opens the recording, runs the tool and turns every
:class:`~tools_app.errors.ToolError` into the error object. A tool never raises into its
caller.
"""
import importlib
import inspect
import json
import logging
import math
import re
import types
import typing
from dataclasses import dataclass
from pathlib import PurePath

import numpy as np

from tools_app.errors import ErrorCode, ToolError

logger = logging.getLogger(__name__)

#: The ten tools in the official catalog order, which is also the display order.
TOOL_NAMES = (
    "get_recording_info",
    "get_channel_list",
    "compute_noise_metrics",
    "compute_psd",
    "compute_band_power",
    "detect_transients",
    "compute_temporal_features",
    "compute_asymmetry",
    "compute_channel_correlation",
    "compute_windowed_features",
)

#: The official six categories of the text reference, in order.
CATEGORIES = (
    "Data Overview",
    "Noise Metrics",
    "Spectral Analysis",
    "Transient Detection",
    "Temporal & Spatial Features",
    "Windowed / Time-Series Analysis",
)

#: Longest record id an error object echoes (a longer one is cut): an agent's id may be any string.
ECHOED_ID_CHARS = 100

_JSON_TYPES = {str: "string", float: "number", int: "integer", bool: "boolean"}
_PATH_SUFFIXES = (".edf", ".bdf", ".fif", ".set", ".txt", ".npy", ".gz", ".vhdr", ".cnt")


@dataclass(frozen=True)
class Choices:
    """Marks a string parameter with the values its schema lists as an enum.

    The values are advertised, not enforced here: the tool decides what to do with others
    (the official PSD tool, for one, treats any method but "multitaper" as Welch).
    """

    values: tuple

    def __init__(self, *values):
        object.__setattr__(self, "values", values)


@dataclass(frozen=True)
class Parameter:
    """One tool argument as the schema and the validator see it."""

    name: str
    json_type: str
    item_type: str | None
    choices: tuple | None
    default: object
    required: bool
    description: str

    def schema(self):
        entry = {"type": self.json_type}
        if self.item_type:
            entry["items"] = {"type": self.item_type}
        if self.choices:
            entry["enum"] = list(self.choices)
        if self.description:
            entry["description"] = self.description
        if self.default is not None:
            entry["default"] = self.default
        return entry


@dataclass(frozen=True)
class ToolSpec:
    """A registered tool: its function, category, version and parameters."""

    name: str
    category: str
    version: str
    description: str
    parameters: tuple
    function: typing.Callable
    aliases: typing.Mapping[str, str]

    def json_schema(self):
        """Return the JSON schema of the tool's arguments."""
        return {
            "type": "object",
            "properties": {parameter.name: parameter.schema() for parameter in self.parameters},
            "required": [parameter.name for parameter in self.parameters if parameter.required],
        }

    def function_schema(self):
        """Return the tool in the OpenAI function-calling format (``tools=[...]``)."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.json_schema()},
        }

    def parse_arguments(self, arguments):
        """Return the keyword arguments for the tool function, with types checked.

        Unknown keys are ignored and a JSON null counts as omitted, as upstream. An alias
        (e.g. ``max_events_per_channel``) is used only when its canonical name is absent.

        Raises
        ------
        ToolError
            ``invalid_argument`` for a missing required argument or a value of the wrong type,
            a boolean where a number is expected, or a non-finite number.
        """
        given = dict(arguments)
        for alias, canonical in self.aliases.items():
            if given.get(canonical) is None and given.get(alias) is not None:
                given[canonical] = given[alias]
        parsed = {}
        for parameter in self.parameters:
            value = given.get(parameter.name)
            if value is None:
                if parameter.required:
                    raise ToolError(ErrorCode.INVALID_ARGUMENT, f"Missing required argument '{parameter.name}'.")
                parsed[parameter.name] = parameter.default
            else:
                parsed[parameter.name] = _checked(parameter, value)
        return parsed


REGISTRY: dict[str, ToolSpec] = {}


def tool(*, category, version="0.1.0", aliases=None):
    """Register the decorated function as a tool in ``category``.

    The function's first parameter receives the recording; the others are the tool's
    arguments, each annotated (``str``, ``float``, ``int``, ``list[str]``, ``X | None``,
    ``typing.Annotated[str, Choices(...)]``) and described in the docstring.
    """
    if category not in CATEGORIES:
        raise ValueError(f"Unknown tool category {category!r}; use one of {CATEGORIES}.")

    def register(function):
        description, parameter_text = _split_docstring(inspect.getdoc(function) or "")
        signature = inspect.signature(function)
        parameters = tuple(
            _parameter(name, entry, parameter_text.get(name, ""))
            for name, entry in list(signature.parameters.items())[1:]
        )
        undocumented = [parameter.name for parameter in parameters if not parameter.description]
        if undocumented:
            raise ValueError(f"Tool {function.__name__} does not document {undocumented}.")
        REGISTRY[function.__name__] = ToolSpec(
            name=function.__name__,
            category=category,
            version=version,
            description=description,
            parameters=parameters,
            function=function,
            aliases=dict(aliases or {}),
        )
        return function

    return register


def _parameter(name, entry, description):
    annotation = entry.annotation
    choices = None
    if typing.get_origin(annotation) is typing.Annotated:
        annotation, *marks = typing.get_args(annotation)
        choices = next((mark.values for mark in marks if isinstance(mark, Choices)), None)
    optional = False
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [member for member in typing.get_args(annotation) if member is not type(None)]
        optional = len(members) < len(typing.get_args(annotation))
        (annotation,) = members
    item_type = None
    if typing.get_origin(annotation) is list:
        (item,) = typing.get_args(annotation)
        json_type, item_type = "array", _JSON_TYPES[item]
    else:
        json_type = _JSON_TYPES[annotation]
    required = entry.default is inspect.Parameter.empty
    if required and optional:
        raise ValueError(f"Parameter {name} is optional in type but has no default.")
    default = None if required else entry.default
    return Parameter(name, json_type, item_type, choices, default, required, description)


def _split_docstring(docstring):
    """Return the description and the per-parameter texts of a numpydoc docstring."""
    lines = docstring.splitlines()
    sections = [index for index in range(len(lines) - 1)
                if lines[index].strip() and re.fullmatch(r"-{3,}", lines[index + 1].strip())]
    description_end = sections[0] if sections else len(lines)
    description = "\n".join(lines[:description_end]).strip()
    texts = {}
    for position, index in enumerate(sections):
        if lines[index].strip() != "Parameters":
            continue
        end = sections[position + 1] if position + 1 < len(sections) else len(lines)
        name, body = None, []
        for line in lines[index + 2 : end]:
            if line and not line.startswith(" "):
                if name:
                    texts[name] = " ".join(body).strip()
                name, body = line.split(":")[0].strip(), []
            elif line.strip():
                body.append(line.strip())
        if name:
            texts[name] = " ".join(body).strip()
    return _unwrap(description), texts


def _unwrap(text):
    """Join wrapped lines into paragraphs; keep blank lines and list items as breaks."""
    paragraphs = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        merged = []
        for line in lines:
            if merged and not line.startswith(("- ", "* ", "#")) and not merged[-1].startswith("#"):
                merged[-1] += " " + line
            else:
                merged.append(line)
        paragraphs.append("\n".join(merged))
    return "\n\n".join(paragraphs)


def _checked(parameter, value):
    """Return ``value`` if it has the parameter's JSON type, else raise ``invalid_argument``."""
    name = parameter.name
    kind = parameter.json_type
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ToolError(ErrorCode.INVALID_ARGUMENT, f"Argument '{name}' must be a number, got {_describe(value)}.")
        if not math.isfinite(value):
            raise ToolError(ErrorCode.INVALID_ARGUMENT, f"Argument '{name}' must be a finite number, got {value}.")
        return value
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolError(ErrorCode.INVALID_ARGUMENT, f"Argument '{name}' must be a whole number, got {_describe(value)}.")
        return value
    if kind == "string":
        if not isinstance(value, str):
            raise ToolError(ErrorCode.INVALID_ARGUMENT, f"Argument '{name}' must be a string, got {_describe(value)}.")
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise ToolError(ErrorCode.INVALID_ARGUMENT, f"Argument '{name}' must be true or false, got {_describe(value)}.")
        return value
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"Argument '{name}' must be a list of strings (e.g. [\"C3\", \"C4\"]), got {_describe(value)}.",
        )
    return list(value)


def shown(value, limit=ECHOED_ID_CHARS):
    """Return ``repr(value)``, cut after ``limit`` characters (marked "…") when longer."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _describe(value):
    """Return a short, safe description of an argument value for an error message."""
    text = json.dumps(value, default=str, ensure_ascii=False)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{type(value).__name__} {text}"


# ---------------------------------------------------------------------- catalog views

def tool_specs():
    """Return the registered tools in catalog order."""
    _load_tools()
    return [REGISTRY[name] for name in TOOL_NAMES]


def function_schemas():
    """Return every tool in the OpenAI function-calling format, in catalog order."""
    return [spec.function_schema() for spec in tool_specs()]


def text_reference(names=TOOL_NAMES):
    """Return the text protocol's tool reference for ``names``, grouped by category.

    The layout is the official one: a heading, each category with each of its tools' name,
    description and one line per parameter (type, enum, required or optional, default as
    JSON, description), then a calling example built from the first tool.
    """
    specs = [spec for spec in tool_specs() if spec.name in names]
    if not specs:
        return "## Available Tools\nNo analysis tools are available for this task; answer from the context given."
    lines = [
        "## Available Tools",
        f"You have access to **{len(specs)}** EEG analysis tools.",
        "Each tool loads the recording itself; pass the `record_id` you were given.\n",
    ]
    for category in CATEGORIES:
        members = [spec for spec in specs if spec.category == category]
        if not members:
            continue
        lines.append(f"### {category}\n")
        for spec in members:
            lines.append(f"**`{spec.name}`** — {spec.description}")
            lines.append("  Parameters:")
            lines.extend(_parameter_line(parameter) for parameter in spec.parameters)
            lines.append("")
    example = specs[0]
    call = {
        "action": "tool_call",
        "tool_name": example.name,
        "arguments": {parameter.name: f"<{parameter.name}>" for parameter in example.parameters if parameter.required},
    }
    lines += [
        "### How to Call a Tool",
        "To call a tool, reply with this JSON:",
        "```json",
        json.dumps(call, indent=2),
        "```",
        "The tool's result comes back in the next message; then call another tool or give your final answer.",
    ]
    return "\n".join(lines)


def _parameter_line(parameter):
    kind = f"array[{parameter.item_type}]" if parameter.item_type else parameter.json_type
    if parameter.choices:
        kind = f"{kind}, one of {list(parameter.choices)}"
    default = f", default={json.dumps(parameter.default)}" if parameter.default is not None else ""
    need = "required" if parameter.required else "optional"
    return f"    - `{parameter.name}` ({kind}, {need}{default}) — {parameter.description}"


def _load_tools():
    """Import the tool definitions, which registers them, and the readers every call uses."""
    importlib.import_module("tools_app.tools")
    importlib.import_module("tools_app.recording")


# ---------------------------------------------------------------------- dispatch

def call_tool(path, tool_name, arguments, *, record_id=None, metadata=None):
    """Run one tool on one recording and return its JSON-serialisable result.

    Parameters
    ----------
    path : str or os.PathLike
        The recording's file. Never shown to the agent.
    tool_name : str
        One of :data:`TOOL_NAMES`.
    arguments : dict
        The agent's arguments; ``record_id`` must be this episode's record id.
    record_id : str, optional
        This episode's record id. When omitted, any record id that is not a path is taken
        to name the recording at ``path``.
    metadata : dict, optional
        The record's metadata (sampling rate and channel names of ``.txt``/``.npy`` files).

    Returns
    -------
    result : dict
        The tool's result (``_meta`` first), or ``{"record_id", "error", "error_code", ...}``.
        Identical arguments give byte-identical results.
    """
    from tools_app.recording import RecordingError, open_recording
    _load_tools()
    echoed = echoed_record_id(arguments, record_id)
    try:
        spec = _resolve_tool(tool_name)
        if not isinstance(arguments, dict):
            raise ToolError(ErrorCode.INVALID_ARGUMENT, "Tool arguments must be a JSON object.")
        requested = _checked_record_id(arguments.get("record_id"), record_id)
        options = spec.parse_arguments(arguments)
        options.pop("record_id")
        try:
            recording = open_recording(path, metadata=metadata)
        except RecordingError as error:
            raise ToolError(
                ErrorCode.UNKNOWN_RECORD,
                f"{_without_path(str(error), path)} (record_id {shown(requested)})",
            ) from None
        return _run(spec, recording, requested, options)
    except ToolError as error:
        return error.to_result(echoed)
    except Exception:
        logger.exception("Tool %s failed", tool_name)
        return ToolError(
            ErrorCode.INTERNAL_ERROR,
            f"Tool execution failed: an internal error occurred in {tool_name}. The arguments may be fine; "
            f"try another call.",
        ).to_result(echoed)


def echoed_record_id(arguments, record_id=None):
    """Return the record id an error object names: the one the agent gave, else the episode's.

    An agent's id longer than :data:`ECHOED_ID_CHARS` is cut there and marked with "…", so
    that an error is never larger than the output budget allows.
    """
    given = arguments.get("record_id") if isinstance(arguments, dict) else None
    if not isinstance(given, str):
        return record_id
    return given if len(given) <= ECHOED_ID_CHARS else given[:ECHOED_ID_CHARS] + "…"


def _run(spec, recording, record_id, options):
    """Run the tool, once more if the kept statistics it read fail their check (then rebuilt)."""
    from tools_app.signal.ranges import source_for
    from tools_app.signal.segments import single_threaded_blas
    from tools_app.signal.stored import StoreError

    single_threaded_blas()  # the work limit's costs are one core's (tools_app.signal.costs)
    for attempt in (1, 2):
        # Floating-point warnings off for this call only (numpy's error state is per thread); the
        # statistics a tool needs are mapped or computed when it first asks for them.
        try:
            with np.errstate(all="ignore"):
                return spec.function(recording, record_id, **options)
        except StoreError as error:
            if attempt == 2:
                raise
            source_for(recording).segments.discard_stored(error)


def _resolve_tool(tool_name):
    spec = REGISTRY.get(tool_name) if isinstance(tool_name, str) else None
    if spec is None:
        raise ToolError(ErrorCode.INVALID_ARGUMENT, f"Unknown tool {tool_name!r}. Available tools: {list(TOOL_NAMES)}")
    return spec


def _checked_record_id(requested, episode_record_id):
    """Return the requested record id if it names this episode's recording."""
    if requested is None:
        raise ToolError(ErrorCode.INVALID_ARGUMENT, "Missing required argument 'record_id'.")
    if not isinstance(requested, str):
        raise ToolError(ErrorCode.INVALID_ARGUMENT, f"Argument 'record_id' must be a string, got {_describe(requested)}.")
    if _looks_like_path(requested) or (episode_record_id is not None and requested != episode_record_id):
        hint = f" The recording of this task is record_id {episode_record_id!r}." if episode_record_id else ""
        raise ToolError(
            ErrorCode.UNKNOWN_RECORD,
            f"Unknown record_id {shown(requested)}: tools read only the recording of this task, named by its "
            f"record_id (file paths are not accepted).{hint}",
        )
    return requested


def _looks_like_path(text):
    return (
        any(separator in text for separator in ("/", "\\", ":"))
        or text.startswith((".", "~"))
        or text.lower().endswith(_PATH_SUFFIXES)
    )


def _without_path(message, path):
    """Return ``message`` with the file's path, directory, name and stem blanked out."""
    pure = PurePath(str(path))
    fragments = {str(pure), str(pure.parent), pure.name, pure.stem} - {"", ".", "/"}
    for fragment in sorted(fragments, key=len, reverse=True):
        if len(fragment) > 1:
            message = message.replace(fragment, "<file>")
    return message
