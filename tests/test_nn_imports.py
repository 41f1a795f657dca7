"""The models and the search import downwards only: nothing in attnseq/nn or attnseq/decoding
imports the run folders, training, the engines, the API or the CLI (they import nn)."""
from __future__ import annotations

import ast
from pathlib import Path

import attnseq

PACKAGE = Path(attnseq.__file__).parent
ABOVE = ("attnseq.runs", "attnseq.train", "attnseq.engines", "attnseq.api", "attnseq.cli", "attnseq.serve")


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside functions, relative imports resolved."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found |= {module} | {f"{module}.{alias.name}" for alias in node.names}
    return found


def test_nn_and_decoding_import_nothing_above_them():
    for folder in ("nn", "decoding"):
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            above = {m for m in imported_modules(path) if m.startswith(ABOVE)}
            assert not above, (path.relative_to(PACKAGE), sorted(above))
