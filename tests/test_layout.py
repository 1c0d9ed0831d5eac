"""The house rules of issue 29's layout, so that a change that breaks one fails here.

Each training script stays short (its model lives in ``zoo``, its plumbing in
``experiments/harness``), ``zoo/`` keeps its rooms, and builders build no optimizer.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT_LINES = 300
SCRIPT_LINES_EXCEPTIONS = {"ps.py": 450}  # the launcher and its tasks in one script
ZOO_TOP_MODULES = 6
TRAINING_CALLS = ("minimize", "apply_gradients")


@pytest.mark.parametrize(
    "script", sorted(p.name for p in (ROOT / "experiments").glob("*.py")), ids=str
)
def test_each_experiment_script_stays_short(script):
    limit = SCRIPT_LINES_EXCEPTIONS.get(script, SCRIPT_LINES)
    lines = len((ROOT / "experiments" / script).read_text().splitlines())
    assert lines <= limit, f"experiments/{script}: {lines} lines, at most {limit}"


def test_zoo_keeps_its_rooms():
    modules = sorted(
        p.name
        for p in (ROOT / "zoo").glob("*.py")
        if p.stem not in ("__init__", "__main__")
    )
    assert len(modules) <= ZOO_TOP_MODULES, modules


def called_name(call):
    """The name a call expression calls: ``f`` of ``f(...)`` and of ``a.b.f(...)``."""
    function = call.func
    if isinstance(function, ast.Attribute):
        return function.attr
    return getattr(function, "id", "")


def test_builders_build_no_optimizer():
    """No call in zoo/models/ makes an optimizer or a training op (a docstring may)."""
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {called_name(node)}"
        for path in sorted((ROOT / "zoo" / "models").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and (called_name(node).endswith("Optimizer") or called_name(node) in TRAINING_CALLS)
    ]
    assert not found, "\n".join(found)
