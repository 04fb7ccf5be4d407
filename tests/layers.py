"""What the layer guards of runs/ and leaderboard/ share: their modules, imports resolved, and import circles."""
import ast
from pathlib import Path


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import one another in a circle (strongly connected, two or more), sorted."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node):  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def module_files(package_dir: Path) -> dict[str, Path]:
    """Every module below ``package_dir`` but its migrations, by dotted name below the package ("" for the package)."""
    found = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir).with_suffix("").parts
        if parts[0] == "migrations":
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def absolute(package: str, module: str, node: ast.ImportFrom, is_package: bool) -> str:
    """The absolute name a ``from`` import in ``package.module`` reads from (relative ones resolved)."""
    if not node.level:
        return node.module or ""
    names = [package, *module.split(".")] if module else [package]
    base = names if is_package else names[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])
