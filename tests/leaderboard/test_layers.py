"""The rooms of ``leaderboard/`` and who may import whom, read from the source with ``ast``.

Each module belongs to a layer: pure code (no database: statistics, the plotly look, the shortcut
audit's rules), data (the models, the episode outcome rule, who sees what, a run's summary), then
the rooms in order (audit, board, analysis, items, comparison, search, explorer, run pages, play, API), and at the top
Django's fixed places (URLs, admin, receivers, app config, template tags, commands). A module imports
modules of its own layer or below, never a ``views`` module (only ``urls`` modules route to views),
never another module's private name; no modules import one another in a circle, and none is over
500 lines. A new module fails the guard until it is given a layer in ``LAYERS``.
"""
from __future__ import annotations

import ast
from pathlib import Path

import leaderboard
from tests import layers
from tests.layers import circles

PURE, DATA, AUDIT, BOARD, ANALYSIS, ITEMS, COMPARISON, SEARCH, EXPLORER, RUN_PAGES, PLAY, API, TOP = range(13)
LAYER_NAMES = ["pure code", "data", "audit", "board", "analysis", "items", "comparison", "search", "explorer",
               "run pages", "play", "API", "top"]

#: Every module of leaderboard/ (migrations aside), by dotted name below ``leaderboard.``, and its layer.
LAYERS = {
    "": TOP,  # the package itself
    "stats": PURE,
    "figures": PURE,
    "formats": PURE,
    "paired": PURE,
    "audit.features": PURE,
    "audit.rules": PURE,
    "models": DATA,
    "outcomes": DATA,
    "access": DATA,
    "summaries": DATA,
    "summaries.scoring": DATA,
    "summaries.kept": DATA,
    "summaries.pairs": DATA,
    "audit": AUDIT,
    "audit.reads": AUDIT,
    "audit.runner": AUDIT,
    "board": BOARD,
    "board.published": BOARD,
    "board.comparability": BOARD,
    "board.ordering": BOARD,
    "board.significance": BOARD,
    "board.ranking": BOARD,
    "board.charts": BOARD,
    "board.downloads": BOARD,
    "board.serializers": BOARD,
    "board.views": BOARD,
    "analysis": ANALYSIS,
    "analysis.selectors": ANALYSIS,
    "analysis.charts": ANALYSIS,
    "analysis.task_charts": ANALYSIS,
    "analysis.failure_modes": ANALYSIS,
    "analysis.failure_charts": ANALYSIS,
    "analysis.views": ANALYSIS,
    "items": ITEMS,
    "items.selectors": ITEMS,
    "items.views": ITEMS,
    "comparison": COMPARISON,
    "comparison.selectors": COMPARISON,
    "comparison.views": COMPARISON,
    "search": SEARCH,
    "search.selectors": SEARCH,
    "search.forms": SEARCH,
    "search.views": SEARCH,
    "search.export": SEARCH,
    "explorer": EXPLORER,
    "explorer.signal": EXPLORER,
    "explorer.reads": EXPLORER,
    "explorer.charts": EXPLORER,
    "explorer.steps": EXPLORER,
    "explorer.windows": EXPLORER,
    "explorer.views": EXPLORER,
    "explorer.record": EXPLORER,
    "explorer.overlays": EXPLORER,
    "explorer.browser": EXPLORER,
    "run_pages": RUN_PAGES,
    "run_pages.forms": RUN_PAGES,
    "run_pages.selectors": RUN_PAGES,
    "run_pages.views": RUN_PAGES,
    "run_pages.control": RUN_PAGES,
    "play": PLAY,
    "play.players": PLAY,
    "play.views": PLAY,
    "play.urls": PLAY,
    "api": API,
    "api.base": API,
    "api.selectors": API,
    "api.serializers": API,
    "api.views": API,
    "api.urls": API,
    "urls": TOP,
    "admin": TOP,
    "receivers": TOP,
    "apps": TOP,
    "templatetags": TOP,
    "templatetags.leaderboard": TOP,
    "templatetags.play": TOP,
    "management": TOP,
    "management.commands": TOP,
    **{f"management.commands.{name}": TOP for name in ("demo", "import_published", "invite_player", "shortcut_audit")},
}  # fmt: skip

#: Modules of views not named ``views``: staff's run control (create, cancel, resume a run).
VIEWS_NAMED_OTHERWISE = {"run_pages.control"}

MAX_LINES = 500

LEADERBOARD_DIR = Path(leaderboard.__file__).resolve().parent


def module_files() -> dict[str, Path]:
    """Every module of leaderboard/ but its migrations, by dotted name below ``leaderboard.`` ("" for the package)."""
    return layers.module_files(LEADERBOARD_DIR)


def _absolute(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    return layers.absolute("leaderboard", module, node, is_package)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; None for anything but names and attributes."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else [*head, node.attr]
    return None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """What ``module`` imports, with the line: modules as dotted names, private names as ``module._name``.

    ``from leaderboard.board import ranking`` counts as importing ``leaderboard.board.ranking``; an
    attribute read ``ranking._rank`` (or ``leaderboard.board.ranking._rank``) on an imported module of
    leaderboard/ counts as importing ``leaderboard.board.ranking._rank``.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append((alias.name, node.lineno))
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    aliases[head] = head
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node, path.name == "__init__.py")
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule.startswith("leaderboard.") and submodule.removeprefix("leaderboard.") in modules:
                    found.append((submodule, node.lineno))
                    aliases[alias.asname or alias.name] = submodule
                elif _is_private(alias.name):
                    found.append((submodule, node.lineno))
                else:
                    found.append((source, node.lineno))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
            continue
        chain = _dotted(node.value)
        if chain is None or chain[0] not in aliases:
            continue
        owner = ".".join([aliases[chain[0]], *chain[1:]])
        if owner == "leaderboard" or owner.removeprefix("leaderboard.") in modules:
            found.append((f"{owner}.{node.attr}", node.lineno))
    return found


def _module_of(imported: str, modules: dict[str, Path]) -> tuple[str | None, str | None]:
    """The module of leaderboard/ an imported name lies in, and the name read from it (None for the module itself)."""
    if imported != "leaderboard" and not imported.startswith("leaderboard."):
        return None, None
    target, name = imported.removeprefix("leaderboard").removeprefix("."), None
    while target not in modules and target:
        target, name = target.rpartition(".")[0], target.rpartition(".")[2]
    return (target, name) if target in modules else (None, None)


def _is_views(module: str) -> bool:
    return module.rpartition(".")[2] == "views" or module in VIEWS_NAMED_OTHERWISE


def _is_urls(module: str) -> bool:
    return module.rpartition(".")[2] == "urls"


def breaches() -> set[tuple[str, int, str, str]]:
    """Every import of leaderboard/ that breaks a rule, as (module, line, imported, rule).

    The rules: "upward" (into a higher layer), "views" (a views module imported outside a ``urls``
    module), "private" (another module's private name, from anywhere).
    """
    modules = module_files()
    found = set()
    for module, path in modules.items():
        for imported, line in imports_of(module, path, modules):
            target, name = _module_of(imported, modules)
            if target is None:
                if _is_private(imported.rpartition(".")[2]):
                    found.add((module, line, imported, "private"))
                continue
            if name is not None and _is_private(name) and target != module:
                found.add((module, line, imported, "private"))
            if _is_views(target) and target != module and not _is_urls(module):
                found.add((module, line, imported, "views"))
            if LAYERS[target] > LAYERS[module]:
                found.add((module, line, imported, "upward"))
    return found


def import_circles() -> list[list[str]]:
    """The groups of leaderboard/ modules that import one another in a circle (strongly connected, two or more)."""
    modules = module_files()
    graph = {module: set() for module in modules}
    for module, path in modules.items():
        for imported, _line in imports_of(module, path, modules):
            target, _name = _module_of(imported, modules)
            if target is not None and target != module and target != "":
                graph[module].add(target)
    return circles(graph)


def unplaced() -> tuple[list[str], list[str]]:
    """The modules of leaderboard/ missing from ``LAYERS``, and the names in ``LAYERS`` no module has."""
    modules = module_files()
    return sorted(set(modules) - set(LAYERS)), sorted(set(LAYERS) - set(modules))


def oversized() -> list[tuple[str, int]]:
    """The modules of leaderboard/ over ``MAX_LINES`` lines, with their length."""
    lengths = {module: len(path.read_text().splitlines()) for module, path in module_files().items()}
    return sorted((module, length) for module, length in lengths.items() if length > MAX_LINES)


def test_every_module_of_the_leaderboard_has_a_layer():
    assert unplaced() == ([], [])


def test_the_leaderboard_imports_only_its_own_layer_or_below_no_views_and_no_private_names():
    modules = module_files()
    described = [
        f"{modules[module].relative_to(LEADERBOARD_DIR.parent)}:{line} {module} ({LAYER_NAMES[LAYERS[module]]}) "
        f"imports {imported}: {rule}"
        for module, line, imported, rule in sorted(breaches())
    ]
    assert described == []


def test_no_modules_of_the_leaderboard_import_one_another_in_a_circle():
    assert import_circles() == []


def test_no_module_of_the_leaderboard_is_over_500_lines():
    assert oversized() == []


def test_the_guard_finds_an_upward_import_a_views_import_and_private_names(tmp_path, monkeypatch):
    files = {name: tmp_path / f"{name.replace('.', '_')}.py"
             for name in ("outcomes", "board.ranking", "board.views", "summaries.scoring", "management.commands.demo",
                          "urls", "play.players")}  # fmt: skip
    monkeypatch.setattr("tests.leaderboard.test_layers.module_files", lambda: files)
    for path in files.values():
        path.write_text("")
    files["outcomes"].write_text("from leaderboard.play.players import is_player\n")
    files["management.commands.demo"].write_text(
        "from leaderboard.board import views\n"
        "from leaderboard.summaries.scoring import _score_tasks\n"
        "from leaderboard.board import ranking as board_ranking\n"
        "import leaderboard.summaries.scoring\n"
        "from runs.queue.workers import _spawn\n"
        "board_ranking._hashable(1)\n"
        "leaderboard.summaries.scoring._instance_rows(None, [])\n"
    )
    files["urls"].write_text("from leaderboard.board import views\n")
    assert breaches() == {
        ("outcomes", 1, "leaderboard.play.players", "upward"),
        ("management.commands.demo", 1, "leaderboard.board.views", "views"),
        ("management.commands.demo", 2, "leaderboard.summaries.scoring._score_tasks", "private"),
        ("management.commands.demo", 5, "runs.queue.workers._spawn", "private"),
        ("management.commands.demo", 6, "leaderboard.board.ranking._hashable", "private"),
        ("management.commands.demo", 7, "leaderboard.summaries.scoring._instance_rows", "private"),
    }


def test_no_module_of_the_leaderboard_is_over_500_lines_nor_outside_the_layers(tmp_path, monkeypatch):
    files = {"stats": tmp_path / "stats.py", "board.ranking": tmp_path / "ranking.py", "board.new": tmp_path / "new.py"}
    monkeypatch.setattr("tests.leaderboard.test_layers.module_files", lambda: files)
    files["stats"].write_text("x = 1\n" * MAX_LINES)
    files["board.ranking"].write_text("x = 1\n" * (MAX_LINES + 1))
    files["board.new"].write_text("")
    assert oversized() == [("board.ranking", MAX_LINES + 1)]
    missing, stale = unplaced()
    assert missing == ["board.new"]
    assert "stats" not in stale and "board.ranking" not in stale


def test_the_guard_finds_modules_that_import_one_another_in_a_circle(tmp_path, monkeypatch):
    files = {name: tmp_path / f"{name.replace('.', '_')}.py"
             for name in ("board.ranking", "board.published", "board.comparability", "models")}  # fmt: skip
    monkeypatch.setattr("tests.leaderboard.test_layers.module_files", lambda: files)
    files["board.ranking"].write_text("from leaderboard.board import published\n")
    files["board.published"].write_text(
        "import leaderboard.board.ranking\nfrom leaderboard.board.comparability import comparability\n"
    )
    files["board.comparability"].write_text("from leaderboard.models import PublishedResult\n")
    files["models"].write_text("")
    assert import_circles() == [["board.published", "board.ranking"]]
