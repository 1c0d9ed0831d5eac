"""Environment checks: the sizes of a usable environment, a clear EnvError otherwise."""

import gymnasium
import pytest

from layers.errors import EnvError
from zoo.rl import envs
from zoo.rl.envs import EnvSpec, check_env, env_problem


def test_cartpole_is_described():
    assert check_env("CartPole-v1") == EnvSpec(4, 2, 475.0)


@pytest.mark.parametrize(
    "env_id, message",
    [
        (
            "CartPol-v1",
            r"CartPol-v1: expected a gymnasium environment id, found 'CartPol-v1' \(not "
            r"registered\); did you mean CartPole-v1",
        ),
        (
            "Pendulum-v1",
            "Pendulum-v1: expected flat Box observations and Discrete actions, found Box",
        ),
    ],
)
def test_unusable_environments_are_refused_by_message(env_id, message):
    with pytest.raises(EnvError, match=message):
        check_env(env_id)


def test_an_environment_that_cannot_be_made_is_refused(monkeypatch):
    def make(env_id):
        raise gymnasium.error.DependencyNotInstalled("box2d is not installed")

    monkeypatch.setattr(gymnasium, "make", make)
    with pytest.raises(
        EnvError,
        match="CartPole-v1: expected an environment gymnasium can make, found "
        "DependencyNotInstalled: box2d",
    ):
        check_env("CartPole-v1")


def test_env_problem_is_a_flag_check(monkeypatch):
    assert env_problem("CartPole-v1", threshold=True) is None
    assert env_problem("CartPol-v1").startswith("expected a gymnasium environment id")
    assert env_problem("Pendulum-v1").startswith("expected flat Box observations")
    monkeypatch.setattr(envs, "check_env", lambda env_id: EnvSpec(4, 2, None))
    assert env_problem("Unsolvable-v0") is None
    assert env_problem("Unsolvable-v0", threshold=True) == (
        "expected an environment with a reward_threshold (what solved means), found none "
        "for Unsolvable-v0; pick one that has it, such as CartPole-v1"
    )
