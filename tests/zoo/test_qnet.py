"""The Q-network and DQN's losses: variables, sharing, the Huber loss, bad sizes."""

import numpy as np
import pytest
import tensorflow as tf

from layers.errors import ShapeError
from zoo.models import q_network
from zoo.models.qnet import huber, td_target
from zoo.sharing.inspect import inspect_model

v1 = tf.compat.v1
NAMES = ["W_hid_1", "b_hid_1", "W_hid_2", "b_hid_2", "W_out", "b_out"]


def names(variables, scope):
    return sorted(v.name[len(scope) + 1 : -2] for v in variables)


def test_q_network_variables_and_sharing(graph):
    x = v1.placeholder(tf.float32, [None, 4])
    net = q_network(x, n_actions=2, scope="q", hidden=(16, 8))
    again = q_network(x, n_actions=2, scope="q", reuse=True, hidden=(16, 8))
    assert net.q_values.shape.as_list() == [None, 2]
    assert names(v1.trainable_variables(), "q") == sorted(NAMES)
    assert len(v1.global_variables()) == 6
    assert again.scope_name == net.scope_name == "q"
    shapes = {v.name: v.shape.as_list() for v in v1.trainable_variables()}
    assert shapes["q/W_hid_1:0"] == [4, 16] and shapes["q/W_out:0"] == [8, 2]


def test_huber_is_quadratic_then_linear(graph):
    errors = np.array([-3.0, -1.0, -0.5, 0.0, 0.25, 2.0], np.float32)
    with v1.Session() as session:
        value = session.run(huber(tf.constant(errors), delta=1.0))
    assert value == pytest.approx(np.mean([2.5, 0.5, 0.125, 0.0, 0.03125, 1.5]))


def test_td_target_bootstraps_unless_terminated_and_double_picks_by_chooser(graph):
    next_q = np.array([[1.0, 3.0], [2.0, -1.0]], np.float32)
    chooser = np.array([[5.0, 0.0], [0.0, 5.0]], np.float32)
    rewards, terminated = np.array([1.0, 2.0], np.float32), np.array([0.0, 1.0], np.float32)
    with v1.Session() as session:
        plain, double = session.run(
            [td_target(rewards, terminated, next_q, 0.5),
             td_target(rewards, terminated, next_q, 0.5, chooser_q=chooser)]
        )  # fmt: skip
    np.testing.assert_allclose(plain, [1.0 + 0.5 * 3.0, 2.0])
    np.testing.assert_allclose(double, [1.0 + 0.5 * 1.0, 2.0])


def test_q_network_rejects_bad_sizes(graph):
    x = v1.placeholder(tf.float32, [None, 4])
    with pytest.raises(
        ShapeError,
        match=r"qnet: expected n_actions to be (a positive int|an int >= 1), "
        r"found 0",
    ):
        q_network(x, n_actions=0)
    assert v1.global_variables() == []


def test_registered_for_inspect():
    rows, _ = inspect_model("q_network")
    assert sorted(row.name for row in rows) == sorted(f"qnet/{n}" for n in NAMES)
