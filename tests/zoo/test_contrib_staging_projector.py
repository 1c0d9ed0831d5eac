"""tf.contrib.staging (TensorFlow's own StagingArea, from the internal module
tensorflow.python.ops.data_flow_ops, as TF 1.15's contrib re-exported it) and
tf.contrib.tensorboard.plugins.projector (the tensorboard package's) under install()."""

import os
import sys

import numpy as np
import pytest
import tensorflow as tf

import zoo.compat
from tests.zoo.test_compat import uninstalled  # noqa: F401  (autouse: nothing installed)
from zoo.compat.contrib import SOURCES, ContribError, ContribModule
from zoo.compat.contrib.names import NAMES

v1 = tf.compat.v1


def test_staging_area_is_tensorflows_and_prefetches_in_order():
    from tensorflow.python.ops import data_flow_ops  # the internal module it comes from

    zoo.compat.install()
    from tensorflow.contrib.staging import StagingArea

    assert StagingArea is data_flow_ops.StagingArea
    with tf.Graph().as_default():
        step = v1.placeholder(tf.int32, [])
        area = tf.contrib.staging.StagingArea([tf.float32, tf.int32], shapes=[[2], []])
        put = area.put([tf.fill([2], tf.cast(step, tf.float32)), step])
        images, label = area.get()
        with v1.Session() as sess:
            sess.run(put, {step: 0})  # warm up: one batch ahead, as input pipelines did
            seen = []
            for i in range(1, 4):
                seen.append(sess.run([images, label, put], {step: i})[:2])
            assert sess.run(area.size()) == 1
    assert [int(lab) for _, lab in seen] == [0, 1, 2]
    np.testing.assert_array_equal(seen[2][0], [2.0, 2.0])


def test_staging_area_refuses_mismatched_dtypes_with_tf_words():
    zoo.compat.install()
    with tf.Graph().as_default():
        area = tf.contrib.staging.StagingArea([tf.float32, tf.int32])
        with pytest.raises(ValueError, match="Datatypes do not match"):
            area.put([tf.zeros([2]), tf.constant(1.5)])
        with pytest.raises(ValueError, match="shapes must be the same length as dtypes"):
            tf.contrib.staging.StagingArea([tf.float32], shapes=[[2], [3]])


def test_projector_writes_tensorboards_config(tmp_path):
    pytest.importorskip("tensorboard")
    zoo.compat.install()
    from tensorflow.contrib.tensorboard.plugins import projector

    with tf.Graph().as_default():
        writer = v1.summary.FileWriter(str(tmp_path))
        config = projector.ProjectorConfig()
        embedding = config.embeddings.add()
        embedding.tensor_name = "embedding:0"
        embedding.metadata_path = "metadata.tsv"
        projector.visualize_embeddings(writer, config)
        writer.close()
    text = (tmp_path / "projector_config.pbtxt").read_text()
    assert 'tensor_name: "embedding:0"' in text and 'metadata_path: "metadata.tsv"' in text
    assert os.path.exists(tmp_path)


def test_projector_without_tensorboard_names_the_package(monkeypatch):
    path = "tensorboard.plugins.projector"
    projector = ContribModule(path, SOURCES[path], NAMES[path])  # nothing looked up yet
    loaded = [name for name in sys.modules if name.startswith("tensorboard.")]
    for name in ["tensorboard", *loaded]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    with pytest.raises(ContribError, match="expected module tensorboard.* found none "
                       "installed; pip install tensorboard"):
        projector.ProjectorConfig  # noqa: B018
