"""The test ids of a file read from its source, for files whose import fails (nothing collected).

unittest-style: methods named test* of classes in the file, including those a class inherits
from other classes of the same file; module-level test* functions.
"""

from __future__ import annotations

import ast
from pathlib import Path


def enumerate_tests(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    ids = [f"{path.name}::{node.name}" for node in tree.body
           if isinstance(node, ast.FunctionDef) and node.name.startswith("test")]
    for name, node in classes.items():
        methods = _test_methods(node, classes, set())
        if methods and not name.endswith("Mixin"):
            ids.extend(f"{path.name}::{name}::{m}" for m in methods)
    return ids


def _test_methods(node: ast.ClassDef, classes: dict, seen: set) -> list[str]:
    if node.name in seen:
        return []
    seen.add(node.name)
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    names = [n.name for n in node.body if isinstance(n, functions) and n.name.startswith("test")]
    for base in node.bases:
        if isinstance(base, ast.Name) and base.id in classes:
            inherited = _test_methods(classes[base.id], classes, seen)
            names.extend(m for m in inherited if m not in names)
    return names
