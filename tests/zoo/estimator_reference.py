"""Run by TF 2.15's Python (the reference venv): trains :mod:`estimator_model` with
tensorflow-estimator 2.15, evaluates, predicts, exports, and runs its
``tail_report`` (TPUEstimator's hooks, params objects, add_metrics, early stopping,
InMemoryEvaluatorHook) in ``MODEL_DIR_tail``; writes what it saw as JSON.

Usage: ``.venv-tf215/bin/python estimator_reference.py MODEL_DIR OUT.json``
"""

import json
import os
import sys

import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import estimator_model as m  # noqa: E402


def main(model_dir, out):
    x, y = m.data()
    config = tf.estimator.RunConfig(save_checkpoints_steps=10, keep_checkpoint_max=3,
                                    tf_random_seed=1)  # fmt: skip
    estimator = tf.estimator.Estimator(m.model_fn, model_dir, config, params={"hidden": 8})
    estimator.train(m.input_fn(x, y), steps=30)
    metrics = estimator.evaluate(m.input_fn(x, y, repeat=False))
    predictions = [
        p["probabilities"].tolist()
        for p in estimator.predict(m.input_fn(x, None, repeat=False))
    ]
    export = estimator.export_saved_model(os.path.join(model_dir, "export", "e"),
                                          m.serving_input_receiver_fn).decode()  # fmt: skip
    json.dump({
        "metrics": {k: float(v) for k, v in metrics.items()},
        "predictions": predictions,
        "variables": estimator.get_variable_names(),
        "export": export,
        "tensorflow": tf.__version__,
        "tail": m.tail_report(f"{model_dir}_tail"),
    }, open(out, "w"))  # fmt: skip


if __name__ == "__main__":
    main(*sys.argv[1:])
