"""Runs :mod:`keras_program`'s programs in a TF1 process (v2 behaviour off), by TF
2.15's Python (the reference venv: TF 2.15's tf.keras, tensorflow-estimator 2.15)
or by ours (``--zoo``: under ``zoo.compat.install()``); predicts from the
model_dirs the other one wrote, if given; writes what it saw as JSON.

Usage: ``PYTHON keras_reference.py [--zoo] OUT_DIR [OTHER_DIR]``
"""

import json
import os
import sys

import tensorflow.compat.v1 as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras_program as p  # noqa: E402


def main(out_dir, other_dir=None):
    tf.disable_v2_behavior()
    report = {
        **{
            name: p.train_and_predict(make, os.path.join(out_dir, name))
            for name, make in p.PROGRAMS.items()
        },
        "variables": {
            name: tf.train.list_variables(os.path.join(out_dir, name))
            for name in p.PROGRAMS
        },
        "fit": p.fit(),
        "collections": p.mixed_collections(),
        "tensorflow": tf.__version__,
    }
    if other_dir:
        report["other"] = {
            name: p.predict(make(os.path.join(other_dir, name)))
            for name, make in p.PROGRAMS.items()
        }
    with open(os.path.join(out_dir, "report.json"), "w") as file:
        json.dump(report, file)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments[0] == "--zoo":
        import zoo.compat

        zoo.compat.install()
        arguments = arguments[1:]
    main(*arguments)
