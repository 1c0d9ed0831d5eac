"""Starting TensorFlow after the flags, without its start-up log lines.

TensorFlow's C++ libraries write INFO and WARNING lines to stderr while they
load (oneDNN, CUDA stubs, CPU features), before its logging is set up, so
``TF_CPP_MIN_LOG_LEVEL`` does not silence them. :func:`import_tensorflow`
sets ``TF_CPP_MIN_LOG_LEVEL=2`` for the rest of the run, drops those lines from
the import's stderr (any other line, an error or a Python warning, is kept) and
sets TensorFlow's Python logger to ERROR (its deprecation notices of the
``tf.compat.v1`` API the zoo is about).
A ``TF_CPP_MIN_LOG_LEVEL`` the user set wins: TensorFlow is then imported as is.
Worker processes (:mod:`experiments.harness.processes`) inherit the choice.
"""

import os
import re
import sys
import tempfile

# "I0000 00:00:1795546832.903587    3377 port.cc:153] ..." and friends (INFO, WARNING).
_LOG_LINE = re.compile(r"[IW]\d{4} [\d:. ]+\d+ [\w./-]+:\d+\] ")
_CHOSEN_HERE = "SCOPE_ZOO_TF_LOG_LEVEL_CHOSEN"  # the level is ours, not the user's
# What import_tensorflow sets for the rest of the run when it chooses the level.
CHOSEN_ENVIRONMENT = {"TF_CPP_MIN_LOG_LEVEL": "2", _CHOSEN_HERE: "1"}
_STARTUP_LINES = (
    "WARNING: All log messages before absl::InitializeLog() is called",
    "To enable the following instructions:",
)


def import_tensorflow():
    """Imports TensorFlow, silencing its start-up INFO/WARNING lines unless the user asks.

    Returns:
        The ``tensorflow`` module.
    """
    users_level = "TF_CPP_MIN_LOG_LEVEL" in os.environ and _CHOSEN_HERE not in os.environ
    if "tensorflow" in sys.modules or users_level:
        import tensorflow

        return tensorflow
    os.environ.update(CHOSEN_ENVIRONMENT)
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import tensorflow
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            lines = captured.read().decode(errors="replace").splitlines(keepends=True)
            sys.stderr.write("".join(line for line in lines if not is_startup_line(line)))
    tensorflow.get_logger().setLevel("ERROR")
    return tensorflow


def silenced_here():
    """True when :func:`import_tensorflow` chose the log level (not the user)."""
    return os.environ.get(_CHOSEN_HERE) == "1"


def is_startup_line(line):
    """True for a C++ INFO/WARNING log line, or the lines absl prints around them."""
    return bool(_LOG_LINE.match(line)) or line.startswith(_STARTUP_LINES)
