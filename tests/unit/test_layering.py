"""The import graph of halluwatch's packages: one direction, no cycles.

Every import counts, at module level or inside a function, so a lazy import
cannot hide a dependency. The layers, lowest first:

    schemas                                   records, codec, ids
    agents.errors / .text / .inputs           shared helpers
    agents.model / .evidence / .scoring       the model, evidence sources, scoring, the sentence parser
      / .parsing                              (siblings do not import each other)
    agents.stages, agents.testing             the pipeline stages; test doubles and an example website
    agents.evaluation                         benchmarks and replay scoring
    stream (runtime)                          broker, Faust app, agents, worker, metrics, web
    stream.commands, stream.cli               the command line

A layer may import only layers below it. ``agents.testing`` (test doubles,
an example website) is for tests and benchmark commands: no runtime module
imports it. Nothing in ``agents`` imports ``stream``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("schemas", "agents", "stream")
SHARED = ("agents.errors", "agents.text", "agents.inputs")
SIBLINGS = ("agents.model", "agents.evidence", "agents.scoring", "agents.parsing")
CLI = ("stream.commands", "stream.cli")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """The halluwatch modules ``path`` imports (``from a import b`` counts b when b is a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] in PACKAGES}


def graph() -> dict[str, set[str]]:
    files = [p for package in PACKAGES for p in (ROOT / package).rglob("*.py")]
    modules = {module_name(p): p for p in files}
    return {name: {m for m in imports_of(path) if m in modules and m != name} for name, path in modules.items()}


def within(module: str, prefixes: tuple[str, ...] | str) -> bool:
    prefixes = (prefixes,) if isinstance(prefixes, str) else prefixes
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def layer(module: str) -> int:
    if within(module, "schemas"):
        return 0
    if within(module, SHARED) or module == "agents":
        return 1
    if within(module, SIBLINGS):
        return 2
    if within(module, ("agents.stages", "agents.testing")):
        return 3
    if within(module, "agents.evaluation"):
        return 4
    if within(module, CLI):
        return 6
    return 5  # stream runtime


def forbidden(importer: str, imported: str) -> str | None:
    """Why ``importer`` must not import ``imported``; None when it may."""
    if layer(imported) > layer(importer):
        return "imports a higher layer"
    if layer(importer) == layer(imported) == 2 and importer.split(".")[:2] != imported.split(".")[:2]:
        return "the model, evidence, scoring and parsing packages do not import each other"
    if within(imported, "agents.testing") and not within(importer, ("agents.testing",) + CLI):
        return "runtime code imports test support"
    if within(importer, "stream") and not within(importer, CLI) and within(imported, "agents.evaluation"):
        return "the stream runtime imports the benchmark code"
    return None


def test_no_forbidden_direction() -> None:
    problems = [
        f"{importer} -> {imported}: {why}"
        for importer, targets in sorted(graph().items())
        for imported in sorted(targets)
        if (why := forbidden(importer, imported))
    ]
    assert not problems, "imports against the layering:\n" + "\n".join(problems)


def test_no_import_cycles() -> None:
    edges = graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []
    cycles: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            # A package's __init__ importing its own submodules is not a cycle through them.
            if nxt.startswith(node + "."):
                continue
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


@pytest.mark.parametrize(("importer", "imported", "allowed"), [
    ("agents.stages.verify", "agents.scoring.calibration", True),
    ("agents.scoring.calibration", "agents.stages.verify", False),
    ("stream.worker", "stream.commands.common", False),
    ("stream.replay", "agents.evaluation.metrics", False),
    ("stream.commands.replay", "agents.evaluation.metrics", True),
    ("agents.evidence.composite", "agents.model.runner", False),
    ("agents.stages.pipeline", "agents.testing.scripted_backend", False),
    ("agents.text", "stream.settings", False),
])
def test_the_rules_themselves(importer: str, imported: str, allowed: bool) -> None:
    assert (forbidden(importer, imported) is None) is allowed
