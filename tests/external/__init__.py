"""Test suites nobody here wrote, run against ours by scripts (not collected by pytest)."""
