"""TensorFlow starts after the flags, quietly unless TF_CPP_MIN_LOG_LEVEL is set."""

import os
import subprocess
import sys

from experiments.harness import startup

START = "from experiments.harness import startup\nstartup.import_tensorflow()\nprint('ok')"


def start(env_level):
    ours = ("TF_CPP_MIN_LOG_LEVEL", startup._CHOSEN_HERE)  # this process's choice
    env = {k: v for k, v in os.environ.items() if k not in ours}
    if env_level is not None:
        env["TF_CPP_MIN_LOG_LEVEL"] = env_level
    return subprocess.run(
        [sys.executable, "-c", START], capture_output=True, text=True, env=env, timeout=120
    )


def test_startup_lines_are_dropped_by_default():
    done = start(None)
    assert done.returncode == 0 and done.stdout == "ok\n"
    assert not any(startup.is_startup_line(line) for line in done.stderr.splitlines())
    assert "absl::InitializeLog" not in done.stderr


def test_a_level_the_user_set_wins():
    done = start("0")
    assert done.returncode == 0 and done.stdout == "ok\n"
    assert any(startup.is_startup_line(line) for line in done.stderr.splitlines())


def test_only_info_and_warning_log_lines_count_as_startup_lines():
    info = "I0000 00:00:1795546832.903587    3377 port.cc:153] oneDNN custom operations"
    warning = "W0000 00:00:1795546832.9    3377 cuda_executor.cc:1] no GPU"
    error = "E0000 00:00:1795546834.426825    3377 cuda_platform.cc:52] failed call"
    assert startup.is_startup_line(info) and startup.is_startup_line(warning)
    assert not startup.is_startup_line(error)
    assert not startup.is_startup_line("x.py:3: DeprecationWarning: old")
