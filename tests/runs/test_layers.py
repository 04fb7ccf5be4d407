"""The rooms of ``runs/`` and who may import whom, read from the source with ``ast``.

Each module belongs to a layer: pure code (no database), data (the models and what writes them),
the episode engine, the queue, and the interfaces (the environment API, interchange, admin,
commands). A module imports modules of its own layer or below, never another module's private
name, and never the leaderboard (which listens for ``runs.signals`` instead); only ``runs.db``
touches Django's internals, and only ``runs.queue.dispatch`` (and ``manage.py qcluster``)
django-q2. No module of ``runs/`` breaks these rules, and none import one another in a circle.
"""
from __future__ import annotations

import ast
from pathlib import Path

import runs
from tests import layers
from tests.layers import circles

PURE, DATA, ENGINE, QUEUE, INTERFACES = range(5)
LAYER_NAMES = ["pure code", "data", "episode engine", "queue", "interfaces"]

#: Every module of runs/ (migrations aside), by dotted name below ``runs.``, and its layer.
LAYERS = {
    "": INTERFACES,  # the package itself
    "agents": PURE,
    "baselines": PURE,
    "baselines.common": PURE,
    "baselines.heuristic": PURE,
    "baselines.random": PURE,
    "baselines.results": PURE,
    "cost": PURE,
    "failures": PURE,
    "limits": PURE,
    "model": PURE,
    "model.agent": PURE,
    "model.litellm_transport": PURE,
    "model.openai_http": PURE,
    "model.reply": PURE,
    "model.retry": PURE,
    "model.routing": PURE,
    "protocol": PURE,
    "redaction": PURE,
    "signals": PURE,
    "model.rate_limit": DATA,
    "models": DATA,
    "db": DATA,
    "services": DATA,
    "specs": DATA,
    "episode": ENGINE,
    "episode.engine": ENGINE,
    "episode.failures": ENGINE,
    "episode.limits": ENGINE,
    "episode.loop": ENGINE,
    "episode.opening": ENGINE,
    "episode.scoring": ENGINE,
    "episode.transcript": ENGINE,
    "environment": ENGINE,
    "environment.service": ENGINE,
    "reports": ENGINE,
    "queue": QUEUE,
    "queue.dispatch": QUEUE,
    "queue.leases": QUEUE,
    "queue.lifecycle": QUEUE,
    "queue.local": QUEUE,
    "queue.worker": QUEUE,
    "sweep": QUEUE,
    "tasks": QUEUE,
    "queue.workers": QUEUE,
    "admin": INTERFACES,
    "apps": INTERFACES,
    "environment.api": INTERFACES,
    "environment.bodies": INTERFACES,
    "environment.urls": INTERFACES,
    "interchange": INTERFACES,
    "interchange.export": INTERFACES,
    "interchange.importing": INTERFACES,
    "interchange.official": INTERFACES,
    "management": INTERFACES,
    "management.console": INTERFACES,
    "management.commands": INTERFACES,
    **{f"management.commands.{name}": INTERFACES for name in (
        "cancel_run", "classify_episodes", "create_env_token", "export_run", "import_official_run", "qcluster",
        "rescore_run", "resume_run", "run_benchmark", "show_prompt")},
}  # fmt: skip

#: Django's internals (query compilers, populators, backends): only ``runs.db`` may use them.
DJANGO_INTERNALS = ("django.db.models.query", "django.db.models.sql", "django.db.backends")
INTERNALS_ALLOWED = {"db"}

#: The queue's library: only the dispatch module sends to it and reads its clusters' state, and
#: ``manage.py qcluster`` starts one.
DJANGO_Q = "django_q"
DJANGO_Q_ALLOWED = {"queue.dispatch", "management.commands.qcluster"}

RUNS_DIR = Path(runs.__file__).resolve().parent


def module_files() -> dict[str, Path]:
    """Every module of runs/ but its migrations, by dotted name below ``runs.`` ("" for the package)."""
    return layers.module_files(RUNS_DIR)


def _absolute(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    return layers.absolute("runs", module, node, is_package)


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[str]:
    """What ``module`` imports: modules as dotted names, and private names as ``module._name``.

    ``from runs import protocol`` counts as importing ``runs.protocol``; an attribute read
    ``protocol._helper`` on such an imported module counts as importing ``runs.protocol._helper``.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(alias.name)
                if alias.asname:
                    aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node, path.name == "__init__.py")
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
    """Every import of runs/ that goes upward, reads another module's private name, reaches the
    leaderboard, uses Django's internals outside ``runs.db``, or django-q2 outside the dispatch."""
    modules = module_files()
    found = set()
    for module, path in modules.items():
        for imported in imports_of(module, path, modules):
            if imported == "leaderboard" or imported.startswith("leaderboard."):
                found.add((module, imported))
                continue
            if imported.startswith(DJANGO_INTERNALS) and module not in INTERNALS_ALLOWED:
                found.add((module, imported))
                continue
            if (imported == DJANGO_Q or imported.startswith(DJANGO_Q + ".")) and module not in DJANGO_Q_ALLOWED:
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


def import_circles() -> list[list[str]]:
    """The groups of runs/ modules that import one another in a circle (strongly connected, two or more)."""
    modules = module_files()
    graph = {module: set() for module in modules}
    for module, path in modules.items():
        for imported in imports_of(module, path, modules):
            target = imported.removeprefix("runs.") if imported.startswith("runs.") else None
            while target is not None and target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != module and target != "":
                graph[module].add(target)
    return circles(graph)


def test_every_module_of_runs_has_a_layer():
    assert sorted(set(module_files()) - set(LAYERS)) == []
    assert sorted(set(LAYERS) - set(module_files())) == []


def test_runs_imports_only_its_own_layer_or_below_and_no_private_names():
    described = [f"{module} ({LAYER_NAMES[LAYERS[module]]}) imports {imported}" for module, imported in sorted(breaches())]
    assert described == []


def test_the_guard_finds_an_upward_import_a_private_name_the_leaderboard_django_internals_and_django_q(tmp_path, monkeypatch):
    source = (
        "from runs.sweep import sweep_runs\n"
        "from runs import db\n"
        "import leaderboard.summaries.scoring\n"
        "from django.db.models.query import get_related_populators\n"
        "from django_q.tasks import async_task\n"
        "db._database()\n"
    )
    monkeypatch.setattr("tests.runs.test_layers.module_files", lambda: {"protocol": tmp_path / "protocol.py",
                                                                        "sweep": tmp_path / "sweep.py",
                                                                        "db": tmp_path / "db.py"})  # fmt: skip
    for name in ("sweep", "db"):
        (tmp_path / f"{name}.py").write_text("")
    (tmp_path / "protocol.py").write_text(source)
    assert breaches() == {
        ("protocol", "runs.sweep"),
        ("protocol", "runs.db"),
        ("protocol", "leaderboard.summaries.scoring"),
        ("protocol", "runs.db._database"),
        ("protocol", "django.db.models.query"),
        ("protocol", "django_q.tasks"),
    }


def test_no_modules_of_runs_import_one_another_in_a_circle():
    assert import_circles() == []


def test_the_guard_finds_modules_that_import_one_another_in_a_circle(tmp_path, monkeypatch):
    files = {name: tmp_path / f"{name}.py" for name in ("tasks", "sweep", "protocol", "cost")}
    monkeypatch.setattr("tests.runs.test_layers.module_files", lambda: files)
    files["tasks"].write_text("from runs import sweep\n")
    files["sweep"].write_text("import runs.tasks\nfrom runs.protocol import parse_text_action\n")
    files["protocol"].write_text("from runs.cost import Pricing\n")
    files["cost"].write_text("")
    assert import_circles() == [["sweep", "tasks"]]
