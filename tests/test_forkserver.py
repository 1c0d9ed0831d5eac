"""A child of tests/forkserver.py is what ``python`` would have been: same output, status,
argv, working directory, environment and ``sys.path``; signal deaths; TensorFlow works; a
local cluster's task joins its private network and ends with its launcher."""

import os
import signal
import subprocess
import sys

import pytest

from tests import forkserver
from zoo.parallel.loopback import PrivateNetwork

PROBE = "import os, sys; print(sys.argv, os.getcwd(), os.environ['PROBE'], sys.path[0])"
PROGRAMS = {
    "c": ["-c", PROBE + "; sys.exit(3)", "a", "b"],
    "m": ["-m", "probe", "--flag"],
    "script": ["probe.py", "x"],
    "stderr": ["-c", "import sys; print('out'); print('err', file=sys.stderr)"],
    "system_exit_text": ["-c", "raise SystemExit('stopped: see the log')"],
    "keyboard_interrupt": ["-c", "raise KeyboardInterrupt"],
    "exception": ["-c", "import json; json.loads('{')"],
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_a_forked_child_equals_a_real_python(name, tmp_path):
    (tmp_path / "probe.py").write_text(PROBE + "\n")
    args = [sys.executable, *PROGRAMS[name]]
    env = {**os.environ, "PROBE": "env seen"}
    found = forkserver.popen(args, env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert isinstance(found, forkserver.Forked)
    out, err = found.communicate(timeout=60)
    expected = subprocess.run(args, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert (found.returncode, out, err) == (
        expected.returncode, expected.stdout, expected.stderr
    )  # fmt: skip


def test_killed_process_group_dies_by_the_signal_and_tensorflow_runs(tmp_path):
    sleeper = forkserver.popen([sys.executable, "-c", "import time; time.sleep(60)"],
                               start_new_session=True)  # fmt: skip
    with pytest.raises(subprocess.TimeoutExpired):
        sleeper.wait(0.2)
    os.killpg(sleeper.pid, signal.SIGKILL)  # a session of its own: its group is its pid
    assert sleeper.wait(30) == -signal.SIGKILL
    with open(tmp_path / "out.txt", "w") as out:
        code = "import tensorflow as tf; print(int(tf.reduce_sum(tf.range(5))))"
        forkserver.popen([sys.executable, "-c", code], stdout=out).wait(60)
    assert (tmp_path / "out.txt").read_text() == "10\n"


def test_an_environment_the_server_cannot_give_runs_in_a_real_process():
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0"}
    process = forkserver.popen([sys.executable, "-c", "pass"], env=env)
    assert isinstance(process, subprocess.Popen)
    assert process.wait(60) == 0


def test_a_task_wrapped_for_a_private_network_is_forked_into_it():
    code = (
        "import os; print(os.readlink('/proc/self/ns/net'))\n"
        "print(open('/proc/net/dev').read())"
    )
    network = PrivateNetwork()
    try:
        wrapped = network.command([sys.executable, "-c", code])
        child = forkserver.popen(wrapped, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert isinstance(child, forkserver.Forked)
        out, _ = child.communicate(timeout=60)
        holders = os.readlink(f"/proc/{network.pid}/ns/net")
    finally:
        network.close()
    namespace, _, _, *interfaces = out.decode().split("\n")
    assert child.returncode == 0
    assert namespace == holders != os.readlink("/proc/self/ns/net")
    assert [line.split(":")[0].strip() for line in interfaces if line] == ["lo"]


def test_a_forked_task_ends_when_its_launcher_does_not_when_its_parent_does():
    launcher = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    code = (
        "import sys, time; from zoo.parallel import distributed\n"
        "distributed.exit_with_parent(int(sys.argv[1]), grace_s=30); time.sleep(60)"
    )
    task = forkserver.popen([sys.executable, "-c", code, str(launcher.pid)])
    try:
        with open(f"/proc/{task.pid}/stat") as f:
            parent = int(f.read().rsplit(")", 1)[1].split()[1])
        assert isinstance(task, forkserver.Forked) and parent != launcher.pid
        with pytest.raises(subprocess.TimeoutExpired):
            task.wait(2)  # its parent, the server, is not the launcher: it runs on
        launcher.kill()
        launcher.wait()
        assert task.wait(30) == -signal.SIGTERM
    finally:
        launcher.kill()
        task.kill()
