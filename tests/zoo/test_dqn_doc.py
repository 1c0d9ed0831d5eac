"""docs/dqn.md's agent runs as written: bursts, a checkpoint, a greedy evaluation."""

import pathlib
import re

import numpy as np

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "dqn.md"


def test_the_page_agent_runs_its_bursts_and_checkpoints(capsys):
    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(code.splitlines()) < 60
    namespace = {"__name__": "dqn_doc"}
    exec(compile(code, "<docs/dqn.md>", "exec"), namespace)  # noqa: S102
    steps, burst, rollout = namespace["STEPS"], namespace["BURST"], namespace["rollout"]
    assert rollout.env_steps == 200 + steps // burst * 64  # warm-up, then each burst's
    assert [step for step, _, _ in namespace["logged"]] == [0, 64, 128, 192]
    assert all(np.isfinite(loss) for _, loss, _ in namespace["logged"])
    assert namespace["runner"].updates == steps
    assert len(namespace["greedy"]) == 5 and min(namespace["greedy"]) >= 8
    with np.load(namespace["path"]) as archive:  # the final checkpoint, buffer included
        assert "var:dqn/target/W_out" in archive and "var:replay/observations" in archive
    assert f"{rollout.env_steps} environment steps" in capsys.readouterr().out
