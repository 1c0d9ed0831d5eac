"""The step profile of a DQN update: every part measured, misuse refused."""

import math

import numpy as np
import pytest
import tensorflow as tf

from layers.errors import ZooError
from zoo.rl.dqn import dqn_update
from zoo.rl.profile import profile_update, update_probes
from zoo.rl.replay import ReplayBuffer

PARTS = {"sample", "noop", "forward", "backward", "apply", "sync", "train_step",
         "burst_update", "burst_feed", "copy"}  # fmt: skip


def test_every_part_is_measured_on_both_clocks():
    with tf.Graph().as_default() as graph:
        agent = dqn_update(4, 2, updates_per_run=3, period=2)
        probes = update_probes(agent)
        init = tf.compat.v1.global_variables_initializer()
    replay, rng = ReplayBuffer(50, 4), np.random.default_rng(0)
    for _ in range(50):
        replay.add(rng.normal(size=4), rng.integers(2), 1.0, rng.normal(size=4), False)
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        profile = profile_update(session, agent, probes, replay, 8, calls=2, rounds=1)
        with pytest.raises(ZooError, match="profile_update: expected calls to be an int "
                           ">= 1, found 0; pass calls=1 or more"):  # fmt: skip
            profile_update(session, agent, probes, replay, 8, calls=0)
        # 7 timed fetches of 2 calls, 2 of them a burst of 3: the updates it took
        assert session.run(agent.updates) == 2 * (1 + 1 + 3)
    assert set(profile) == {"cpu_ms", "wall_ms"}
    for parts in profile.values():  # net of a no-op's times: no order on a shared machine
        assert set(parts) == PARTS and all(math.isfinite(ms) for ms in parts.values())
