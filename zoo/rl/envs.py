"""Gymnasium environments a value-based agent can run: checked before any work.

:func:`check_env` tells whether an id names an environment with flat observations
and discrete actions, and returns their sizes. It imports gymnasium, not
TensorFlow, so a command checks its ``--env`` flag (:func:`env_problem`) before
TensorFlow starts.

Usage::

    spec = check_env("CartPole-v1")    # EnvSpec(n_observations=4, n_actions=2, ...)
    q = q_network(x, n_actions=spec.n_actions)
    p.add_argument("--env", check=env_problem)   # a flag of experiments.harness.flags
"""

import collections
import difflib

from layers.errors import EnvError

EnvSpec = collections.namedtuple(
    "EnvSpec", ("n_observations", "n_actions", "reward_threshold")
)
"""An environment's observation width, number of actions and ``reward_threshold``
(the return at which it counts as solved, or None)."""


def check_env(env_id):
    """Returns the :data:`EnvSpec` of a gymnasium environment id.

    Args:
        env_id: a registered id, such as ``"CartPole-v1"``.

    Returns:
        ``EnvSpec(n_observations, n_actions, reward_threshold)``.

    Raises:
        EnvError: the id is not registered (the message names close matches),
            gymnasium cannot make the environment (a missing dependency), or its
            observations are not a flat Box or its actions not Discrete.
    """
    import gymnasium

    if env_id not in gymnasium.envs.registry:
        close = difflib.get_close_matches(env_id, list(gymnasium.envs.registry), n=3)
        hint = f"did you mean {', '.join(close)}?" if close else "e.g. CartPole-v1"
        raise EnvError(
            f"{env_id}: expected a gymnasium environment id, found {env_id!r} (not "
            f"registered); {hint}"
        )
    try:
        env = gymnasium.make(env_id)
    except gymnasium.error.Error as err:
        raise EnvError(
            f"{env_id}: expected an environment gymnasium can make, found "
            f"{type(err).__name__}: {err}; install what it needs or pick another id"
        ) from None
    try:
        observations, actions = env.observation_space, env.action_space
        if not (
            isinstance(actions, gymnasium.spaces.Discrete)
            and isinstance(observations, gymnasium.spaces.Box)
            and len(observations.shape) == 1
        ):
            raise EnvError(
                f"{env_id}: expected flat Box observations and Discrete actions, found "
                f"{observations} and {actions}; pick a discrete-action environment such "
                "as CartPole-v1"
            )
        return EnvSpec(observations.shape[0], int(actions.n), env.spec.reward_threshold)
    finally:
        env.close()


def env_problem(env_id, threshold=False):
    """What is wrong with ``env_id`` as a flag's value, or None: a command's check.

    Args:
        env_id: what the flag holds.
        threshold: also require a ``reward_threshold`` (what solved means).

    Returns:
        None, or ``"expected X, found Y; fix"``: :func:`check_env`'s message
        without the leading id (the flag's name stands there).
    """
    try:
        spec = check_env(env_id)
    except EnvError as err:
        return str(err).removeprefix(f"{env_id}: ")
    if threshold and spec.reward_threshold is None:
        return (
            f"expected an environment with a reward_threshold (what solved means), found "
            f"none for {env_id}; pick one that has it, such as CartPole-v1"
        )
    return None
