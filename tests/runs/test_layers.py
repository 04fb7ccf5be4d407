"""The rooms of ``runs/`` and who may import whom, read from the source with ``ast``.

Each module belongs to a layer: pure code (no database), data (the models and what writes them),
the episode engine, the queue, and the interfaces (the environment API, interchange, admin,
commands). A module imports modules of its own layer or below, never another module's private
name, and never the leaderboard (which listens for finished runs instead). Today's breaches are
listed in ``ALLOWED``; each step of the refactor empties it, and an entry that no longer happens
fails the test, so the list only shrinks.
"""
from __future__ import annotations

import ast
from pathlib import Path

import runs

PURE, DATA, ENGINE, QUEUE, INTERFACES = range(5)
LAYER_NAMES = ["pure code", "data", "episode engine", "queue", "interfaces"]

#: Every module of runs/ (migrations aside), by dotted name below ``runs.``, and its layer.
LAYERS = {
    "": INTERFACES,  # the package itself
    "agents": PURE,
    "cost": PURE,
    "limits": PURE,
    "openai_http": PURE,
    "protocol": PURE,
    "redaction": PURE,
    "models": DATA,
    "statements": DATA,
    "services": DATA,
    "loop": ENGINE,
    "environment": ENGINE,
    "execution": QUEUE,
    "sweep": QUEUE,
    "tasks": QUEUE,
    "workers": QUEUE,
    "admin": INTERFACES,
    "apps": INTERFACES,
    "env_api": INTERFACES,
    "env_urls": INTERFACES,
    "interchange": INTERFACES,
    "management": INTERFACES,
    "management.console": INTERFACES,
    "management.commands": INTERFACES,
    **{f"management.commands.{name}": INTERFACES for name in (
        "cancel_run", "create_env_token", "export_run", "import_official_run", "invite_player", "qcluster",
        "rescore_run", "resume_run", "run_benchmark", "show_prompt")},
}  # fmt: skip

#: Breaches that exist today, each ``(importing module, what it imports)``; the refactor removes them.
ALLOWED = {
    ("agents", "runs.models"),  # the paper's decoding defaults live with the models
    ("environment", "runs.execution"),  # finish_run
    ("environment", "leaderboard.services"),
    ("environment", "runs.loop._EpisodeLoop"),
    ("environment", "runs.loop._finish"),
    ("environment", "runs.loop._spec_name"),
    ("execution", "leaderboard.services"),
    ("management.commands.import_official_run", "leaderboard.services"),
    ("management.commands.invite_player", "leaderboard.play"),
}

RUNS_DIR = Path(runs.__file__).resolve().parent


def module_files() -> dict[str, Path]:
    """Every module of runs/ but its migrations, by dotted name below ``runs.`` ("" for the package)."""
    found = {}
    for path in sorted(RUNS_DIR.rglob("*.py")):
        parts = path.relative_to(RUNS_DIR).with_suffix("").parts
        if parts[0] == "migrations":
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The absolute name a ``from`` import reads from (relative ones resolved against ``module``)."""
    if not node.level:
        return node.module or ""
    package = ["runs", *module.split(".")] if module else ["runs"]
    is_package = module_files()[module].name == "__init__.py"
    base = package if is_package else package[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(module: str, path: Path) -> list[str]:
    """What ``module`` imports: modules as dotted names, and private names as ``module._name``.

    ``from runs import protocol`` counts as importing ``runs.protocol``; an attribute read
    ``protocol._helper`` on such an imported module counts as importing ``runs.protocol._helper``.
    """
    modules = module_files()
    tree = ast.parse(path.read_text(), filename=str(path))
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(alias.name)
                if alias.asname:
                    aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule.startswith("runs.") and submodule.removeprefix("runs.") in modules:
                    found.append(submodule)
                    aliases[alias.asname or alias.name] = submodule
                elif alias.name.startswith("_"):
                    found.append(submodule)
                else:
                    found.append(source)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append(f"{aliases[node.value.id]}.{node.attr}")
    return found


def breaches() -> set[tuple[str, str]]:
    """Every import of runs/ that goes upward, reads another module's private name, or reaches the leaderboard."""
    modules = module_files()
    found = set()
    for module, path in modules.items():
        for imported in imports_of(module, path):
            if imported == "leaderboard" or imported.startswith("leaderboard."):
                found.add((module, imported))
                continue
            if imported != "runs" and not imported.startswith("runs."):
                continue
            target, private = imported.removeprefix("runs.").removeprefix("runs"), None
            while target not in modules and "." in target:
                target, private = target.rsplit(".", 1)[0], target.rsplit(".", 1)[1]
            if target not in modules:
                continue
            if private is not None and private.startswith("_") and target != module:
                found.add((module, imported))
            elif LAYERS[target] > LAYERS[module]:
                found.add((module, imported))
    return found


def test_every_module_of_runs_has_a_layer():
    assert sorted(set(module_files()) - set(LAYERS)) == []
    assert sorted(set(LAYERS) - set(module_files())) == []


def test_runs_imports_only_its_own_layer_or_below_and_no_private_names():
    unexpected = breaches() - ALLOWED
    described = [f"{module} ({LAYER_NAMES[LAYERS[module]]}) imports {imported}" for module, imported in sorted(unexpected)]
    assert described == []


def test_the_allowed_breaches_all_still_happen():
    """An allowed breach that was mended comes off the list: the list only shrinks."""
    assert sorted(ALLOWED - breaches()) == []


def test_the_guard_finds_an_upward_import_a_private_name_and_the_leaderboard(tmp_path, monkeypatch):
    source = (
        "from runs.execution import finish_run\n"
        "from runs import loop\n"
        "import leaderboard.services\n"
        "loop._finish()\n"
    )
    monkeypatch.setattr("tests.runs.test_layers.module_files", lambda: {"protocol": tmp_path / "protocol.py",
                                                                        "execution": tmp_path / "execution.py",
                                                                        "loop": tmp_path / "loop.py"})  # fmt: skip
    for name in ("execution", "loop"):
        (tmp_path / f"{name}.py").write_text("")
    (tmp_path / "protocol.py").write_text(source)
    assert breaches() == {
        ("protocol", "runs.execution"),
        ("protocol", "runs.loop"),
        ("protocol", "leaderboard.services"),
        ("protocol", "runs.loop._finish"),
    }
