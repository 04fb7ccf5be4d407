"""The ten EEG tools: recording access, signal functions, registry and output budget.

The public entry points are :func:`call_tool` (run one tool for an episode), the catalog
``TOOL_NAMES``, and the generated ``function_schemas()`` and ``text_reference()``. They are
loaded on first use so that importing the Django app stays cheap.
"""
_EXPORTS = {
    "call_tool": "tools_app.registry",
    "TOOL_NAMES": "tools_app.registry",
    "CATEGORIES": "tools_app.registry",
    "function_schemas": "tools_app.registry",
    "text_reference": "tools_app.registry",
    "tool_specs": "tools_app.registry",
    "ErrorCode": "tools_app.errors",
    "ToolError": "tools_app.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'tools_app' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)
