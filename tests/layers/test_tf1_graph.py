"""layers.tf1's training steps against TensorFlow's legacy layers, graph against graph:
a step builds the graph TensorFlow's own layers build, node for node (names, op types,
inputs, attributes), so it runs the same kernels on both sides.

Run as a script with ``TF_USE_LEGACY_KERAS=1``, it writes TensorFlow's graphs::

    TF_USE_LEGACY_KERAS=1 python -m tests.layers.test_tf1_graph graphs.json
"""

import json
import sys

import numpy as np
import pytest
import tensorflow as tf

from experiments.bench import tf1_layers
from layers import tf1
from tests.conftest import LEGACY_REFERENCE

v1 = tf.compat.v1


def classifier(L, images):
    """The bench's CNN step (``tf1_layers.cnn``), average pooling added, without
    its ``kernel_regularizer`` and dropout, where the graphs differ by design and
    run the same kernels: TF 2.21's ``get_variable(regularizer=)``, which our layers
    call, builds the loss as ops of its own (two copies when the variable is made,
    one more at each read) where TF's legacy layers compute it once; dropout's op
    seed is TF 1.15's (the graph's op count) where tf_keras gives its own."""
    h = L.conv2d(images, 8, 3, padding="same", activation=tf.nn.relu, name="conv1")
    h = L.max_pooling2d(h, 2, 2)
    h = L.average_pooling2d(L.conv2d(h, 8, 3, padding="same"), 2, 2)
    logits = L.dense(L.flatten(h), 10, name="logits")
    labels = tf.constant(np.arange(images.shape[0]) % 10)
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    return v1.train.MomentumOptimizer(0.01, 0.9).minimize(loss)


# program -> a function (L, images) -> its train op
PROGRAMS = {"dcgan": tf1_layers.dcgan, "classifier": classifier}


def step_nodes(L, program):
    """The nodes one training step of ``program`` runs, built with the layers
    namespace ``L``, each as its ``NodeDef`` text, in the graph's order."""
    images = np.random.default_rng(0).random((8, tf1_layers.SIDE, tf1_layers.SIDE, 1))
    with tf.Graph().as_default() as graph:
        v1.set_random_seed(0)
        train = PROGRAMS[program](L, tf.constant(images, tf.float32))
        names = {op.name for op in tf1_layers.step_ops(train)}
        return [str(node) for node in graph.as_graph_def().node if node.name in names]


@pytest.fixture(scope="module")
def tensorflows_graphs(legacy_files):
    """``{program: step_nodes}`` from TensorFlow's own layers (:func:`main`, in the
    tests' one ``tf_keras`` subprocess)."""
    return json.loads(legacy_files["graphs"].read_text())


@LEGACY_REFERENCE
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_a_training_step_is_tensorflows_graph_node_for_node(tensorflows_graphs, program):
    expected = tensorflows_graphs[program]
    found = step_nodes(tf1, program)
    assert len(found) == len(expected)
    different = [pair for pair in zip(found, expected, strict=True) if pair[0] != pair[1]]
    assert not different, f"ours, then TensorFlow's:\n{different[0][0]}\n{different[0][1]}"


def main(path):
    """Writes ``{program: step_nodes}`` of ``tf.compat.v1.layers`` to ``path``."""
    graphs = {program: step_nodes(v1.layers, program) for program in PROGRAMS}
    with open(path, "w") as file:
        json.dump(graphs, file)


if __name__ == "__main__":
    main(sys.argv[1])
