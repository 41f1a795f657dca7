"""The package's layout keeps its design: imports go downwards only, scratch/ needs NumPy alone,
the numpy engine needs no torch, inference does not load the training package, and files are
named for what they hold."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

PACKAGE = ROOT / "attnseq"


def module_name(path: Path) -> str:
    """``attnseq/nn/rnn/cells.py`` -> ``attnseq.nn.rnn.cells`` (a package's __init__: the package)."""
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``name`` imports (top level or inside functions)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            found |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return {m for m in found if m in known and m != name}


def external_imports(path: Path) -> set[str]:
    """Top-level names of the absolute imports in ``path`` (``numpy``, ``torch``, ...)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add(node.module.split(".")[0])
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_circles():
    known = modules()
    graph = {name: imports_of(name, path, set(known)) for name, path in known.items()}
    assert circles(graph) == []
    # the walker sees a circle when there is one
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def package_of(module: str) -> str:
    """The package-level node a module belongs to: a first-level subpackage of attnseq or a
    top-level module (``attnseq.nn.rnn.cells`` -> ``attnseq.nn``, ``attnseq.runs`` -> itself)."""
    return ".".join(module.split(".")[:2])


def test_no_import_circles_between_packages():
    """With each first-level subpackage and each top-level module one node, the imports still go
    one way; a circle is named with the imports that close it."""
    known = modules()
    why: dict[tuple[str, str], list[str]] = {}
    for name, path in known.items():
        for imported in imports_of(name, path, set(known)):
            if package_of(name) != package_of(imported):
                why.setdefault((package_of(name), package_of(imported)), []).append(f"{name} imports {imported}")
    graph = {package_of(name): set() for name in known}
    for importer, imported in why:
        graph[importer].add(imported)
    found = circles(graph)
    assert found == [], "\n".join(
        f"{' <-> '.join(group)}: "
        + "; ".join(line for (a, b), lines in sorted(why.items()) if a in group and b in group for line in lines)
        for group in found
    )


@pytest.mark.parametrize(
    "folder, allowed",
    [
        ("scratch", {"numpy", "__future__", "math", "typing", "collections", "dataclasses"}),
        ("engines/numpy_engine", None),  # anything but torch
    ],
)
def test_numpy_code_imports_no_torch(folder, allowed):
    """scratch/ imports NumPy and the standard library only, and nothing of attnseq outside it;
    the numpy engine's adapter imports anything but torch."""
    known = set(modules())
    for path in (PACKAGE / folder).rglob("*.py"):
        external = external_imports(path)
        assert "torch" not in external, path
        if allowed is not None:
            assert external <= allowed, (path, external - allowed)
            inside = "attnseq." + folder.replace("/", ".")
            assert all(m.startswith(inside) for m in imports_of(module_name(path), path, known)), path


def test_scratch_imports_with_torch_blocked():
    code = (
        "import sys; sys.modules['torch'] = None; import attnseq.scratch; import attnseq.engines; "
        "assert not [m for m in sys.modules if m.split('.')[0] == 'torch' and sys.modules[m]]"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


ABOVE_THE_MODELS = ("attnseq.runs", "attnseq.train", "attnseq.engines", "attnseq.api", "attnseq.cli", "attnseq.serve")


def test_nn_and_decoding_import_nothing_above_them():
    """The models and the search import downwards only: nothing in attnseq/nn or attnseq/decoding
    imports the run folders, training, the engines, the API, the CLI or the server (they import nn)."""
    known = modules()
    for name, path in known.items():
        if name.startswith(("attnseq.nn", "attnseq.decoding")):
            above = {m for m in imports_of(name, path, set(known)) if m.startswith(ABOVE_THE_MODELS)}
            assert not above, (name, sorted(above))


def test_files_are_named_for_what_they_hold():
    stale = [p.name for p in PACKAGE.rglob("*.py") if p.stem.endswith(("_extra", "_custom", "_new", "_old", "2"))]
    assert stale == []
