"""docs/batchnorm.md runs as written: its Python blocks, in order, with their asserts."""

import pathlib
import re

from zoo.__main__ import main

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


def test_the_inspector_table_on_the_page_is_what_it_prints(capsys, tmp_path):
    shown = re.search(
        r"```\n\$ python -m zoo (inspect .*?)\n(.*?)```", DOC.read_text(), re.S
    )
    argv = shown.group(1).split()
    argv[argv.index("--logdir") + 1] = str(tmp_path)
    assert main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[:-1] == shown.group(2).splitlines()[:-1]  # all but the logdir line
