"""Reinforcement learning: replay buffer and rollout, environments, the DQN update,
the burst runner, return statistics, the step profile."""
