"""docs/batchnorm.md runs as written: its Python blocks, in order, with their asserts."""

import pathlib
import re

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "batchnorm.md"


def test_the_page_runs_and_its_claims_hold(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the page writes runs/batchnorm/model.ckpt
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 3
    namespace = {"__name__": "batchnorm_doc"}
    exec(compile("\n".join(blocks), "<docs/batchnorm.md>", "exec"), namespace)  # noqa: S102
    assert (tmp_path / "runs" / "batchnorm" / "model.ckpt.index").exists()
    names = [v.name for v in namespace["graph"].get_collection("variables")]
    assert names == [
        *(f"net/bn/{n}:0" for n in ("gamma", "beta", "moving_mean", "moving_variance")),
        "net/out/W:0",
        "net/out/b:0",
    ]
    assert namespace["layer"].variable_names == [
        "bn/gamma", "bn/beta", "bn/moving_mean", "bn/moving_variance"
    ]  # fmt: skip
