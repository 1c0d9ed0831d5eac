"""docs/towers.md's example runs as written and trains the two towers."""

import pathlib
import re

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "towers.md"


def test_the_page_example_runs_and_learns():
    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    namespace = {"__name__": "towers_doc"}
    exec(compile(code, "<docs/towers.md>", "exec"), namespace)  # noqa: S102
    assert namespace["names"] == [
        "net/W", "net/b", "net/bn/beta", "net/bn/gamma", "net/bn/moving_mean",
        "net/bn/moving_variance",
    ]  # fmt: skip
    assert namespace["accuracy"] > 0.9
