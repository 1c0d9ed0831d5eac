"""Reinforcement learning: replay buffer and rollout, environments."""
