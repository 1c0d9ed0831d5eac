"""Where the time of a DQN update goes: its parts, timed in milliseconds per call.

The parts come from fetches that nest (a no-op run, the loss, the gradients, the
optimizer step, the step and its sync): each part is a fetch's time minus the
one it contains. :func:`update_probes` builds the two fetches the agent does not
have, while its graph is built; :func:`profile_update` times them all.

Usage::

    agent = dqn_update(4, 2, updates_per_run=128)
    probes = update_probes(agent)                  # before the graph is finalized
    ...
    parts = profile_update(session, agent, probes, rollout.replay, batch_size=64)
    parts["cpu_ms"]["burst_update"]                # an update of a burst, CPU ms
"""

import time

import numpy as np
import tensorflow as tf

from layers.checks import int_problem, require


def update_probes(agent):
    """Builds a ``noop`` fetch and the ``gradients`` of the agent's loss (one scalar:
    no arrays are copied out), in the agent's graph; returns them in a dict."""
    weights = tf.compat.v1.trainable_variables()
    return {
        "noop": tf.constant(0, name="noop"),
        "gradients": tf.add_n(
            [tf.reduce_sum(g) for g in tf.gradients(agent.loss, weights)]
        ),
    }


def profile_update(session, agent, probes, replay, batch_size, calls=200, rounds=7):
    """Times the parts of a training step on replay batches, in ms per call.

    ``sample`` is the numpy draw of a batch; ``noop`` a ``session.run`` that
    computes nothing (the round trip every call pays); ``forward`` the loss
    beyond that; ``backward`` the gradients beyond the loss; ``apply`` Adam's
    update beyond the gradients; ``sync`` the target's check and sync beyond the
    update; ``train_step`` a whole ``train_op`` of one update; ``burst_update``
    an update of a burst of ``updates_per_run`` in one ``session.run`` (its time
    divided by K); ``burst_feed`` feeding a burst's K batches (a run that
    computes nothing, beyond ``noop``); ``copy`` a full hard copy alone. Each
    fetch is timed in batches of ``calls`` calls, the fetches taking turns,
    ``rounds`` times; the fastest round counts. The updates it takes move the
    agent's variables: profile after training (and its last checkpoint).

    Args:
        session: the agent's session.
        agent: a :class:`zoo.rl.dqn.DQNUpdate`.
        probes: :func:`update_probes` of the agent.
        replay: a filled :class:`zoo.rl.replay.ReplayBuffer` (drawn with a
            generator of its own, seed 0).
        batch_size: transitions per update.
        calls: calls per timed batch.
        rounds: timed batches per fetch.

    Returns:
        ``{"cpu_ms": {part: ms}, "wall_ms": {part: ms}}``: the CPU time of this
        process (all its threads; what other processes barely disturb) and the
        elapsed time.

    Raises:
        ZooError: ``batch_size``, ``calls`` or ``rounds`` is not an int >= 1.
    """
    for name, value in (("batch_size", batch_size), ("calls", calls), ("rounds", rounds)):
        require("profile_update", int_problem(value, name=name), f"pass {name}=1 or more")
    rng, updates_per_run = np.random.default_rng(0), agent.updates_per_run

    def feeds(count):
        """The feeds of a run of ``count`` updates: the batches, then the count."""
        return [*agent.stacks(replay.sample(rng, count * batch_size), count), count]

    batch, burst = feeds(1), feeds(updates_per_run)
    fetches = {
        "noop": probes["noop"],
        "forward": agent.loss,
        "gradients": probes["gradients"],
        "update": agent.update_op,
        "train": agent.train_op,
        "copy": agent.start_op,
    }
    placeholders = [*agent.batch, agent.count]
    timed = {name: session.make_callable(f, placeholders) for name, f in fetches.items()}
    timed["sample"] = lambda *_: replay.sample(rng, batch_size)
    train, noop = timed["train"], timed["noop"]
    timed["burst"] = lambda *_: train(*burst)  # the same fetch, fed a whole burst
    timed["feed"] = lambda *_: noop(*burst)  # a burst's batches fed, nothing computed
    clocks = {"cpu_ms": time.process_time, "wall_ms": time.perf_counter}
    best = {clock: dict.fromkeys(timed, float("inf")) for clock in clocks}
    for _ in range(rounds):
        for name, call in timed.items():
            began = {clock: read() for clock, read in clocks.items()}
            for _ in range(calls):
                call(*batch)
            for clock, read in clocks.items():
                best[clock][name] = min(best[clock][name], (read() - began[clock]) / calls)
    return {
        clock: _parts({k: v * 1e3 for k, v in ms.items()}, updates_per_run)
        for clock, ms in best.items()
    }


def _parts(ms, updates_per_run):
    """The step's parts from the times of the nested fetches (see profile_update)."""
    return {
        "sample": ms["sample"],
        "noop": ms["noop"],
        "forward": ms["forward"] - ms["noop"],
        "backward": ms["gradients"] - ms["forward"],
        "apply": ms["update"] - ms["gradients"],
        "sync": ms["train"] - ms["update"],
        "train_step": ms["train"],
        "burst_update": ms["burst"] / updates_per_run,
        "burst_feed": ms["feed"] - ms["noop"],
        "copy": ms["copy"],
    }
