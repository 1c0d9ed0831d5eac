"""zoo.sharing.state and restore: copies, soft updates, frozen copies, restores, eager."""

import numpy as np
import pytest
import tensorflow as tf

from layers import DataError, EagerError, ScopeError, ShapeError, ZooError
from zoo.models import mlp_classifier
from zoo.sharing.restore import restore_scope
from zoo.sharing.state import (
    FROZEN_VARIABLES,
    copy_scope,
    copy_variables,
    frozen_copy,
    frozen_template,
)

v1 = tf.compat.v1


def seed_net(x, use_c=False):
    """The seed's create_graph body: x + a + b, with an extra variable c on request."""
    ones = v1.ones_initializer()
    a = v1.get_variable("a", [1], initializer=ones)
    b = v1.get_variable("b", [1], initializer=ones)
    if use_c:
        v1.get_variable("c", [1], initializer=ones)
    return x + a + b


def build_seed(scope, x, use_c=False):
    with v1.variable_scope(scope):
        return seed_net(x, use_c)


def variable(name):
    (found,) = [v for v in v1.global_variables() if v.name == name + ":0"]
    return found


def make(scope, shapes, dtype=tf.float32, seed=0, trainable=True, use_resource=None):
    """Creates ``scope/<name>`` for each name -> shape, with seeded random values."""
    rng = np.random.default_rng(seed)
    with v1.variable_scope(scope):
        return {
            name: v1.get_variable(
                name,
                initializer=rng.normal(size=shape).astype(dtype.as_numpy_dtype),
                trainable=trainable,
                use_resource=use_resource,
            )
            for name, shape in shapes.items()
        }


def is_ref(variable):
    return variable.dtype != variable.dtype.base_dtype


@pytest.mark.parametrize("use_resource", [True, False])
def test_seed_example_in_sync_out_of_sync_in_sync(graph, use_resource):
    x = v1.placeholder(tf.float32)
    original = build_seed("original", x, use_c=True)
    backup = frozen_copy(
        lambda scope: build_seed(scope, x), "original", "backup", use_resource=use_resource
    )
    assert [v.name for v in backup.variables] == ["backup/a:0", "backup/b:0"]
    assert [is_ref(v) for v in backup.variables] == [not use_resource] * 2
    assert backup.unmatched == ("original/c",)
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        assert sess.run([original, backup.output], {x: 5}) == [[7], [7]]
        sess.run(variable("original/a").assign([3]))
        assert sess.run([original, backup.output], {x: 5}) == [[9], [7]]
        sess.run(backup.sync_op)
        assert sess.run([original, backup.output], {x: 5}) == [[9], [9]]


def test_copy_scope_matches_exact_relative_names_not_substrings(graph):
    make("net", {"net_w": [2], "b": [3]}, seed=1)
    make("network", {"net_w": [2], "b": [3]}, seed=2)
    make("past", {"net_w": [2], "b": [3]}, seed=3)
    copy = copy_scope("net", "past")
    assert [(s.name, d.name) for s, d in copy.pairs] == [
        ("net/net_w:0", "past/net_w:0"),
        ("net/b:0", "past/b:0"),
    ]
    assert copy.unmatched == ()
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        sess.run(copy.op)
        for name in ("net_w", "b"):
            np.testing.assert_array_equal(
                *sess.run([variable(f"past/{name}"), variable(f"net/{name}")])
            )
        assert not np.array_equal(*sess.run([variable("past/b"), variable("network/b")]))


@pytest.mark.parametrize("use_resource", [True, False])
def test_soft_update_matches_numpy(graph, use_resource):
    shapes = {"W": [3, 4], "V": [2, 20], "b": [4]}  # V: copied by rows if a ref
    make("online", shapes, seed=1)
    make("target", shapes, seed=2, use_resource=use_resource)
    update = copy_scope("online", "target", tau=0.25)
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        online = sess.run({n: variable(f"online/{n}") for n in shapes})
        expected = sess.run({n: variable(f"target/{n}") for n in shapes})
        for _ in range(2):
            sess.run(update.op)
            expected = {n: 0.25 * online[n] + 0.75 * expected[n] for n in shapes}
        for name in shapes:
            np.testing.assert_allclose(
                sess.run(variable(f"target/{name}")), expected[name], rtol=1e-6
            )


def test_non_trainable_copied_only_when_asked(graph):
    make("src", {"w": [2]}, seed=1)
    make("src", {"count": [1]}, seed=1, trainable=False)
    make("dst", {"w": [2]}, seed=2)
    make("dst", {"count": [1]}, seed=2, trainable=False)
    trainable_only = copy_scope("src", "dst")
    everything = copy_scope("src", "dst", include_non_trainable=True)
    assert len(trainable_only.pairs) == 1 and len(everything.pairs) == 2
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        before = sess.run(variable("dst/count"))
        sess.run(trainable_only.op)
        np.testing.assert_array_equal(sess.run(variable("dst/count")), before)
        sess.run(everything.op)
        np.testing.assert_array_equal(
            *sess.run([variable("dst/count"), variable("src/count")])
        )


@pytest.mark.parametrize("tau", [0, 1.5, -0.1, True, "1"])
def test_tau_out_of_range(graph, tau):
    make("a", {"w": [1]})
    make("b", {"w": [1]})
    with pytest.raises(
        ZooError, match=r"expected tau to be a finite number in \(0, 1\], found"
    ):
        copy_scope("a", "b", tau=tau)


def test_every_missing_and_mismatched_variable_is_listed(graph):
    make("original", {"a": [1], "b": [1], "c": [1]})
    make("backup", {"a": [2], "d": [1], "e": [1]})
    with pytest.raises(ScopeError) as raised:
        copy_scope("original", "backup")
    message = str(raised.value)
    assert "found 2 missing and 1 mismatched" in message
    assert "backup/d (no 'd' in 'original')" in message
    assert "backup/e (no 'e' in 'original')" in message
    assert "backup/a [2] float32 vs original/a [1] float32" in message


def test_shape_and_dtype_mismatch(graph):
    make("src", {"w": [2, 3], "b": [3]})
    make("dst", {"w": [3, 2]})
    make("dst", {"b": [3]}, dtype=tf.float64)
    with pytest.raises(ShapeError, match=r"dst/b \[3\] float64 vs src/b \[3\] float32"):
        copy_scope("src", "dst")


def test_scope_errors(graph):
    make("net", {"w": [1]})
    make("net/inner", {"w": [1]})
    with pytest.raises(
        ScopeError, match="expected trainable or frozen variables under 'nope'"
    ):
        copy_scope("net", "nope")
    with pytest.raises(ScopeError, match="expected two disjoint scopes"):
        copy_scope("net", "net/inner")
    with pytest.raises(ScopeError, match="expected a non-empty scope name, found ''"):
        copy_scope("net", "")


def test_ref_destination_is_overwritten_in_place(graph):
    shapes = {"W": [3, 16], "V": [16, 15], "b": [4]}
    src = make("src", shapes, seed=1)
    dst = make("dst", shapes, seed=2, use_resource=False)
    copy = copy_scope("src", "dst")
    # Ref variables get copy ops that write their own buffer (rows of >= 16
    # elements by ScatterUpdate), never a resource assign that aliases the source.
    writers = {op.inputs[0].op.name: op.type for op in copy.op.control_inputs}
    assert writers == {"dst/W": "ScatterUpdate", "dst/V": "Assign", "dst/b": "Assign"}
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        sess.run(copy.op)
        copied = sess.run(src)
        for name in shapes:
            np.testing.assert_array_equal(sess.run(dst[name]), copied[name])
        sess.run([v.assign(v + 1) for v in src.values()])
        for name in shapes:  # the copies do not follow later writes to the source
            np.testing.assert_array_equal(sess.run(dst[name]), copied[name])


@pytest.mark.parametrize("use_resource", [True, False])
def test_frozen_copy_gets_no_gradient(graph, use_resource):
    x = v1.placeholder(tf.float32, [None, 4])
    y = v1.placeholder(tf.float32, [None, 2])

    def builder(scope):
        return mlp_classifier(x, y, scope=scope, hidden=(20,))

    current = builder("current")
    past = frozen_copy(builder, "current", "past", use_resource=use_resource)
    names = ["W_hid_1", "b_hid_1", "W_RO", "b_RO"]
    assert [v.name for v in past.variables] == [f"past/{n}:0" for n in names]
    assert all("past" not in v.name for v in v1.trainable_variables())
    assert v1.get_collection(FROZEN_VARIABLES) == list(past.variables)
    assert tf.gradients(past.output.loss, list(past.variables)) == [None] * 4
    train = v1.train.GradientDescentOptimizer(0.5).minimize(current.loss + past.output.loss)
    rng = np.random.default_rng(0)
    feed = {x: rng.random((8, 4)), y: np.eye(2)[rng.integers(0, 2, 8)]}
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        sess.run(past.sync_op)
        frozen = sess.run(list(past.variables))
        for _ in range(3):
            sess.run(train, feed)
        for before, after in zip(frozen, sess.run(list(past.variables)), strict=True):
            np.testing.assert_array_equal(before, after)
        assert not np.allclose(frozen[0], sess.run(current.layers[0].w))


def save_scope(sess, directory, variables):
    return v1.train.Saver(var_list=variables).save(sess, str(directory / "model"))


def test_restore_by_scope_round_trip(tmp_path):
    x_value = np.random.default_rng(0).random((5, 4)).astype(np.float32)
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 4])
        y = v1.placeholder(tf.float32, [None, 2])
        net = mlp_classifier(x, y, scope="mlp", hidden=(3,))
        v1.train.AdamOptimizer().minimize(net.loss)  # slots are saved too
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            saved = sess.run(net.y_pred, {x: x_value})
            save_scope(sess, tmp_path, v1.global_variables())
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 4])
        y = v1.placeholder(tf.float32, [None, 2])
        other = mlp_classifier(x, y, scope="other", hidden=(3,))
        restore = restore_scope(str(tmp_path), "mlp", "other")
        assert [name for name, _ in restore.pairs] == [
            "mlp/W_hid_1",
            "mlp/b_hid_1",
            "mlp/W_RO",
            "mlp/b_RO",
        ]
        assert "mlp/W_hid_1/Adam" in restore.unmatched
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            assert not np.allclose(sess.run(other.y_pred, {x: x_value}), saved)
            sess.run(restore.op)
            np.testing.assert_allclose(
                sess.run(other.y_pred, {x: x_value}), saved, rtol=1e-6
            )


def test_restore_errors(graph, tmp_path):
    make("saved", {"w": [2], "b": [2]})
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        prefix = save_scope(sess, tmp_path, v1.global_variables())
    make("more", {"w": [2], "b": [2], "extra": [1]})
    make("wide", {"w": [3], "b": [2]})
    with pytest.raises(
        DataError, match=r"absent: expected a TensorFlow checkpoint \(a prefix"
    ):
        restore_scope(str(tmp_path / "absent"), "saved", "more")
    with pytest.raises(ScopeError, match="expected tensors under 'nope' in the checkpoint"):
        restore_scope(prefix, "nope", "more")
    with pytest.raises(ScopeError, match=r"more/extra \(no 'extra' in checkpoint scope"):
        restore_scope(prefix, "saved", "more")
    with pytest.raises(ShapeError, match=r"wide/w \[3\] float32 vs saved/w \[2\] float32"):
        restore_scope(prefix, "saved", "wide")


def test_graph_only_functions_refuse_eager():
    with pytest.raises(EagerError, match="use copy_variables"):
        copy_scope("a", "b")
    with pytest.raises(EagerError, match="use frozen_template"):
        frozen_copy(lambda scope: None, "a", "b")


def test_eager_templates_seed_example_and_no_gradient():
    online = v1.make_template("online", seed_net)
    past = frozen_template("past", seed_net)
    x = tf.constant([5.0])
    online(x), past(x)
    assert past.trainable_variables == []
    copy = copy_variables(online, past.variables)
    assert copy.op is None and len(copy.pairs) == 2
    a = next(v for v in online.variables if v.name == "online/a:0")
    a.assign([3.0])
    assert (online(x).numpy(), past(x).numpy()) == ([9.0], [7.0])
    copy_variables(online, past.variables)
    assert (online(x).numpy(), past(x).numpy()) == ([9.0], [9.0])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(online(x) + past(x))
    past_grads, online_grads = tape.gradient(
        loss, [list(past.variables), online.trainable_variables]
    )
    assert past_grads == [None, None]
    assert all(g is not None for g in online_grads)


def test_eager_soft_update_of_variable_lists_matches_numpy():
    rng = np.random.default_rng(0)
    values = {n: rng.normal(size=(3, 2)).astype(np.float32) for n in ("s", "d")}
    src = [tf.Variable(values["s"], name="online/layer/W")]
    dst = [tf.Variable(values["d"], name="target/layer/W")]
    copy_variables(src, dst, tau=0.1)
    np.testing.assert_allclose(
        dst[0].numpy(), 0.1 * values["s"] + 0.9 * values["d"], rtol=1e-6
    )


def test_eager_errors():
    w = tf.Variable([1.0], name="net/w")
    with pytest.raises(ZooError, match="expected src to hold tf.Variable objects, found"):
        copy_variables([w.numpy()], [w])
    with pytest.raises(ScopeError, match="expected variables in dst, found none"):
        copy_variables([w], [])
    twin = [tf.Variable([1.0], name="dup/w"), tf.Variable([1.0], name="dup/w")]
    with pytest.raises(ScopeError, match="expected unique names in dst, found dup/w twice"):
        copy_variables([w], twin)
    with pytest.raises(ScopeError, match="expected every src variable under 'other'"):
        copy_variables([w], [tf.Variable([1.0], name="t/w")], src_scope="other")
    with pytest.raises(ShapeError, match=r"t/w \[2\] float32 vs net/w \[1\] float32"):
        copy_variables([w], [tf.Variable([1.0, 2.0], name="t/w")])
