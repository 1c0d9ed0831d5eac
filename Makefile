# Set-up: `make install` then `make test`. Experiments write under runs/.
VENV ?= .venv
PY := $(VENV)/bin/python
DATASET ?=
DATA_DIR ?=
ARGS ?=
# No DATASET: whatever the DATA_DIR files are (identified by content), else tfds MNIST.
DATA_FLAGS := $(if $(DATASET),--dataset $(DATASET)) $(if $(DATA_DIR),--data-dir $(DATA_DIR))

.PHONY: install reference fashion-mnist test test-fast lint tf-layers-tests inspect experiment-dqn \
	experiment-ps bench bench-state bench-gradients bench-towers bench-dqn bench-canned \
	bench-ps bench-tf1-keras

install: reference
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -e '.[dev,experiments]'

# TensorFlow 2.15 + tensorflow-estimator 2.15 in a venv of its own: the reference the
# tf.estimator tests and bench run as a subprocess (TF 2.16 removed tf.estimator).
REFERENCE_VENV ?= .venv-tf215
reference:
	test -x $(REFERENCE_VENV)/bin/python || python3 -m venv $(REFERENCE_VENV)
	$(REFERENCE_VENV)/bin/python -m pip install -q 'tensorflow==2.15.*' \
		'tensorflow-estimator==2.15.*'

# The full Fashion-MNIST from Debian's package (as root): the README's DATA_DIR and the
# tests that train on real data (they skip without it).
FASHION_MNIST := /usr/share/datasets/fashion-mnist
fashion-mnist:
	test -e $(FASHION_MNIST) || \
		{ apt-get update -qq && apt-get install -y -qq dataset-fashion-mnist; }

# Two pytest workers: the subprocess-heavy tests (runs, kills, clusters) overlap. Tests
# marked xdist_group run on one worker (tests/zoo/test_four_nets.py: one net's graph run).
test:
	$(PY) -m pytest -q -n 2 --dist loadgroup

test-fast:
	$(PY) -m pytest -q -n 2 --dist loadgroup -m "not slow"

lint:
	$(PY) -m ruff check layers zoo experiments tests

# TensorFlow's own tf.layers tests against layers.tf1 (docs/tf1-layers.md): TF_TESTS is a
# folder outside the repo holding tf-keras v2.21.0's legacy_tf_layers/*_test.py.
tf-layers-tests:
	$(PY) -m tests.external.tf_layers_tests $(TF_TESTS) $(ARGS)

# Experiments: DATASET=mnist|fashion_mnist, DATA_DIR=<dir of IDX files>, ARGS=<more flags>.
# make experiment-NAME runs experiments/NAME.py (dashes for underscores), e.g.
# experiment-autoencoder, experiment-ensemble, experiment-sweep, experiment-snapshot,
# experiment-eager-autoencoder, experiment-siamese, experiment-rnn, experiment-gan,
# experiment-towers.
experiment-%:
	$(PY) -m experiments.$(subst -,_,$*) $(DATA_FLAGS) $(ARGS)

# DQN on CartPole-v1 (gymnasium): no target network vs hard copy vs Polyak vs double DQN,
# 5 seeds each.
experiment-dqn:
	$(PY) -m experiments.dqn $(ARGS)

MODEL ?= autoencoder
inspect:
	$(PY) -m zoo inspect $(MODEL) $(ARGS)

# MODE=async: 1 ps, each worker applies its own steps; MODE=sync: the workers all-reduce
# every step's gradients (docs/distributed.md).
WORKERS ?= 2
MODE ?= async
experiment-ps:
	$(PY) -m experiments.ps --mode $(MODE) --workers $(WORKERS) $(DATA_FLAGS) $(ARGS)

# Benchmarks: results as JSON, never timed tests.
bench:
	$(PY) -m experiments.bench.speed $(DATA_FLAGS) $(ARGS)

bench-canned:
	$(PY) -m experiments.bench.canned $(ARGS)

bench-tf1-keras:
	$(PY) -m experiments.bench.tf1_keras $(ARGS)

bench-state:
	$(PY) -m experiments.bench.state $(ARGS)

bench-gradients:
	$(PY) -m experiments.bench.gradients $(DATA_FLAGS) $(ARGS)

bench-towers:
	$(PY) -m experiments.bench.towers $(ARGS)

bench-dqn:
	$(PY) -m experiments.bench.dqn $(ARGS)

# Synchronous vs asynchronous workers vs one process, 1-4 workers on loopback.
bench-ps:
	$(PY) -m experiments.bench.ps $(DATA_FLAGS) $(ARGS)
