"""``make test``'s ``--dist loadgroup`` keeps each ``xdist_group`` on one worker.

The groups share what is costly to build (tests/zoo/test_four_nets.py: a net's graph
run; tests/experiments/test_conformance.py: a row's uninterrupted run). With pytest
9.2 and pytest-xdist 3.8 the grouping silently stopped (pytest-xdist issue 1386): both
workers built some of them (a minute of work, half a minute of ``make test``'s wall time
on 2 cores). The dev extra of pyproject.toml pins a pytest that groups.
"""

import subprocess
import sys

# Two groups of three tests; each test appends its worker's name to its group's file.
GROUPED = """
import os
import pytest

@pytest.mark.parametrize("group", [
    pytest.param(g, marks=pytest.mark.xdist_group(g)) for g in ("a", "b")
])
@pytest.mark.parametrize("test", range(3))
def test_note_the_worker(group, test):
    with open(f"{group}.txt", "a") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""


def test_loadgroup_runs_each_group_on_one_worker(tmp_path):
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    flags = ["-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *flags, "--rootdir", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    workers = {g: (tmp_path / f"{g}.txt").read_text().split() for g in ("a", "b")}
    assert [len(names) for names in workers.values()] == [3, 3]
    assert all(len(set(names)) == 1 for names in workers.values()), (
        f"the tests of a group ran on several workers: {workers}; install the dev "
        "extra's pytest (pip install -e '.[dev]'), see pytest-xdist issue 1386"
    )
