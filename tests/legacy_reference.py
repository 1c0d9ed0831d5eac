"""TensorFlow's own legacy layers and cells (tf_keras), run for the tests in one
subprocess under ``TF_USE_LEGACY_KERAS=1``: the programs and shim probe of
``tests/tf1_programs.py``, the cells of ``tests/tf1_rnn_programs.py`` and the training
graphs of ``tests/layers/test_tf1_graph.py``, each written by that module's ``main``
into a file of :data:`FILES`::

    TF_USE_LEGACY_KERAS=1 python -m tests.legacy_reference DIRECTORY
"""

import os
import pathlib
import subprocess
import sys

from tests.tf1_programs import REPO

FILES = {"layers": "layers.npz", "rnn_cell": "rnn_cell.npz", "graphs": "graphs.json"}


def run(directory):
    """Runs this module in a ``tf_keras`` subprocess; returns ``{part: its file}``.

    Args:
        directory: where the files go (the shim probe saves its models there too).
    """
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1"}
    command = [sys.executable, "-m", __spec__.name, str(directory)]
    subprocess.run(command, env=env, cwd=REPO, check=True, capture_output=True)
    return {part: pathlib.Path(directory, name) for part, name in FILES.items()}


def main(directory):
    """Writes every file of :data:`FILES` into ``directory``."""
    from tests import tf1_programs, tf1_rnn_programs  # noqa: PLC0415
    from tests.layers import test_tf1_graph  # noqa: PLC0415

    test_tf1_graph.main(os.path.join(directory, FILES["graphs"]))
    tf1_rnn_programs.main(os.path.join(directory, FILES["rnn_cell"]))
    tf1_programs.main(os.path.join(directory, FILES["layers"]))


if __name__ == "__main__":
    main(sys.argv[1])
