"""zoo.models.bn_conv: names, sharing under reuse, the ablation, misuse."""

import pytest

from layers.errors import ShapeError
from tests.conftest import tf
from zoo.models import get_model
from zoo.models.bn_conv import bn_conv_classifier


def placeholders(pixels=64):
    x = tf.compat.v1.placeholder(tf.float32, [None, pixels])
    return x, tf.compat.v1.placeholder(tf.float32, [None, 3])


def test_variables_are_named_and_shared_under_reuse(graph):
    x, y = placeholders()
    net = bn_conv_classifier(x, y, scope="net", filters=(2, 4))
    names = [v.op.name for v in tf.compat.v1.global_variables()]
    bn = [f"net/bn{i}/{n}" for n in ("gamma", "beta", "moving_mean", "moving_variance")
          for i in (1,)]  # fmt: skip
    assert names[:5] == ["net/conv1/W", *bn]  # no bias before batch norm
    assert names[-2:] == ["net/W_RO", "net/b_RO"] and len(names) == 12
    updates = len(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS))
    evaluated = bn_conv_classifier(x, y, scope="net", reuse=True, training=False,
                                   filters=(2, 4))  # fmt: skip
    assert len(tf.compat.v1.global_variables()) == 12
    assert len(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)) == updates
    assert evaluated.layers[0].w is net.layers[0].w
    assert get_model("bn_conv_classifier") is bn_conv_classifier


def test_without_batch_norm_there_is_no_bn_scope(graph):
    bn_conv_classifier(*placeholders(), scope="plain", filters=(2, 4), batch_norm=False)
    names = [v.op.name for v in tf.compat.v1.global_variables()]
    assert names[:2] == ["plain/conv1/W", "plain/conv1/b"] and len(names) == 6
    assert not [name for name in names if "/bn" in name]


@pytest.mark.parametrize(
    ("pixels", "filters", "message"),
    [
        (63, (2, 4), "expected square images whose side is divisible by 4, found 63"),
        (36, (2, 4), "expected square images whose side is divisible by 4, found 36"),
        (64, (2,), r"expected filters of the two convolutions, found \(2,\)"),
        (64, (2, 0), r"expected filters\[1\] to be an int >= 1, found 0"),
    ],
)
def test_misuse_is_refused(graph, pixels, filters, message):
    with pytest.raises(ShapeError, match=message):
        bn_conv_classifier(*placeholders(pixels), scope="net", filters=filters)
