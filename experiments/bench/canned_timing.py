"""The timed program of ``experiments.bench.canned``: a canned ``DNNClassifier``
trained through ``train()``, as a TF 1.x program writes it. It imports only numpy
and TensorFlow, so TensorFlow 2.15's own estimator runs it too:

    python experiments/bench/canned_timing.py STEPS   # prints the rates as JSON
"""

import json
import sys
import tempfile
import time

import numpy as np
import tensorflow.compat.v1 as tf

# the deep part of tensorflow/models' census wide_deep: 100-75-50-25, batch 40
WIDTH, HIDDEN, CLASSES, BATCH = 32, [100, 75, 50, 25], 2, 40
# Untimed: a new session's first steps, and the first triggers of the hooks that log and
# write summaries every 100 steps (at 100 and 200 each new set of fetches costs the
# runtime a new executor, ~0.1 s, once); a multiple of the K of K steps per run.
WARMUP = 256


class _Clock(tf.train.SessionRunHook):
    """The wall and CPU times of the session runs' ends."""

    def __init__(self):
        self.ends = []

    def after_run(self, run_context, run_values):
        self.ends.append((time.perf_counter(), time.process_time()))


def steps_per_second(estimators, steps, config=None, steps_per_run=1):
    """Training steps per second of a DNNClassifier (wall clock, and per second of
    the process's CPU time, steadier on a shared machine), graph building and the
    first WARMUP steps (at least) left out.

    Args:
        estimators: the module holding ``DNNClassifier`` (``tf.estimator``).
        steps: the steps timed.
        config: a RunConfig for the estimator, or None.
        steps_per_run: the training steps each session run makes (config's).

    Returns:
        ``{"steps_per_second": wall, "steps_per_cpu_second": cpu}``.
    """
    rng = np.random.RandomState(0)
    x = rng.randn(BATCH * 16, WIDTH).astype(np.float32)
    y = rng.randint(0, CLASSES, (BATCH * 16, 1))

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(BATCH)

    model = estimators.DNNClassifier(
        HIDDEN, [tf.feature_column.numeric_column("x", shape=(WIDTH,))],
        tempfile.mkdtemp(), n_classes=CLASSES, config=config,
    )  # fmt: skip
    clock = _Clock()
    model.train(input_fn, hooks=[clock], steps=WARMUP + steps)
    # the runs that make the untimed steps; timing starts at the end of the next one
    first = -(-WARMUP // steps_per_run)
    # the last run may make fewer than steps_per_run steps
    timed = int(model.get_variable_value("global_step")) - (first + 1) * steps_per_run
    (wall, cpu), (wall_start, cpu_start) = clock.ends[-1], clock.ends[first]
    return {
        "steps_per_second": timed / (wall - wall_start),
        "steps_per_cpu_second": timed / (cpu - cpu_start),
    }


if __name__ == "__main__":
    tf.logging.set_verbosity(tf.logging.ERROR)
    print(json.dumps(steps_per_second(tf.estimator, int(sys.argv[1]))))
