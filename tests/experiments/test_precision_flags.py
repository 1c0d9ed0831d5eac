"""--precision on the experiments that build their own graphs: the flag, the resume's
refusal, the runs and their records (an emulated bfloat16 on a fake CPU), and the
products of the eager autoencoder's and the DQN's steps in the policy's dtype."""

import importlib
import json
import math

import keras
import pytest
import tensorflow as tf

from experiments import dqn, eager_autoencoder, ps
from experiments.harness import cluster, flags
from layers.errors import ZooError
from zoo.constants import PRECISION_POLICIES
from zoo.models import autoencoder
from zoo.rl.envs import check_env
from zoo.sharing.share import share
from zoo.training import precision

OWN_GRAPHS = ("eager_autoencoder", "dqn", "ps", "snapshot", "sweep", "ensemble")
TINY = ("--steps", "4", "--batch-size", "16")
# A few seconds' run of each (ps: tests/experiments/test_ps.py runs its clusters).
TINY_RUNS = {
    "eager_autoencoder": (*TINY, "--validation", "100"),
    "snapshot": (*TINY, "--hidden", "16"),
    "sweep": (*TINY, "--validation", "200", "--hidden", "16", "--learning-rates", "0.01",
              "--keep-probs", "1.0", "--l2s", "0.0"),
    "ensemble": (*TINY, "--validation", "0"),
    "dqn": ("--variant", "double", "--seeds", "1", "--steps", "8", "--learning-starts",
            "20", "--buffer-size", "100", "--hidden", "8,8", "--train-every", "8",
            "--updates-per-run", "4", "--profile-calls", "0", "--eval-episodes", "1"),
}  # fmt: skip


def precision_flag(module):
    (action,) = [a for a in module.build_parser()._actions if a.dest == "precision"]
    return action


@pytest.mark.parametrize("name", OWN_GRAPHS)
def test_the_flag_is_the_harness_one_and_a_resume_refuses_another_precision(name, tmp_path):
    module = importlib.import_module(f"experiments.{name}")
    action = precision_flag(module)
    assert action.default == "float32" and action.choices == tuple(PRECISION_POLICIES)
    assert not action.may_differ_on_resume
    run = tmp_path / "run"
    run.mkdir()
    record = {"experiment": f"experiments.{name}", "flags": {"precision": "mixed_bfloat16"}}
    (run / "run.json").write_text(json.dumps(record))
    with pytest.raises(
        ZooError,
        match=rf"--resume {run}: expected --precision 'mixed_bfloat16' as the run was "
        r"started with \(run.json\), found --precision 'float32'; drop --precision",
    ):
        flags.parse_args(
            module.build_parser(), ["--resume", str(run), "--precision", "float32"]
        )


def test_a_parameter_server_task_is_started_with_the_precision(tiny_data_dir, tmp_path):
    argv = ["--precision", "mixed_bfloat16", "--data-dir", tiny_data_dir]
    settings = flags.parse_args(ps.build_parser(), argv)
    task_command = cluster.task_command("experiments.ps", settings, str(tmp_path),
                                        ps.TASK_FLAGS)  # fmt: skip
    command = task_command({}, "worker", 1)
    assert command[command.index("--precision") + 1] == "mixed_bfloat16"


@pytest.mark.slow
@pytest.mark.parametrize("name", TINY_RUNS)
def test_a_bfloat16_run_records_its_precision_and_a_cpu_that_emulates_it(
    name, tiny_data_dir, tmp_path, monkeypatch, capsys
):
    cpuinfo = tmp_path / "cpuinfo"  # a CPU without avx512_bf16 or amx_bf16
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f\n\n")
    monkeypatch.setattr(precision, "CPUINFO", str(cpuinfo))
    out = tmp_path / "run"
    data = () if name == "dqn" else ("--data-dir", tiny_data_dir)
    argv = [*TINY_RUNS[name], *data, "--precision", "mixed_bfloat16", "--out", str(out)]
    assert importlib.import_module(f"experiments.{name}").main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    record = json.loads((out / "run.json").read_text())
    gpu = bool(tf.config.list_physical_devices("GPU"))
    emulated = None if gpu else precision.EMULATED["mixed_bfloat16"]
    expected = {"policy": "mixed_bfloat16", "emulated": emulated}
    assert record["started"]["precision"] == expected == results["precision"]
    assert record["flags"]["precision"] == "mixed_bfloat16"
    assert (f"warning: {emulated}" in capsys.readouterr().out) == (not gpu)
    numbers = [value for value in _leaves(results) if isinstance(value, float)]
    assert numbers and all(math.isfinite(value) for value in numbers)


def _leaves(value):
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def product_dtypes(graph_def):
    """The dtype of every MatMul of a graph and of its functions (loop bodies)."""
    functions = graph_def.library.function
    nodes = [*graph_def.node, *(node for f in functions for node in f.node_def)]
    return [tf.as_dtype(node.attr["T"].type) for node in nodes if node.op == "MatMul"]


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_the_eager_step_multiplies_in_the_policys_dtype(policy):
    model = share(autoencoder, "ae", tied=True, n_hidden=16)
    images = tf.random.stateless_uniform([8, 784], seed=(1, 2))
    model(images[:1])  # the variables, made outside the policy as the script does
    optimizer = keras.optimizers.Adagrad(0.1)
    optimizer.build(model.trainable_variables)
    step = eager_autoencoder.eager_step(model, optimizer, policy)
    first = float(step(images))
    graph = step.get_concrete_function(images).graph.as_graph_def()
    compute = precision.get_policy(policy).compute_dtype
    assert len(product_dtypes(graph)) >= 2  # forward and backward
    assert set(product_dtypes(graph)) == {compute}
    assert [v.dtype for v in model.variables] == [tf.float32] * 3
    for _ in range(5):
        last = float(step(images))
    assert last < first


def test_the_dqn_burst_multiplies_in_bfloat16_on_float32_variables():
    argv = ["--precision", "mixed_bfloat16", "--hidden", "8,8", "--updates-per-run", "4"]
    settings = dqn.parse_then_start_tensorflow(argv)
    graph, agent, _, _ = dqn.build("double", settings, check_env("CartPole-v1"), seed=0)
    products = product_dtypes(graph.as_graph_def())
    # online, target, double's chooser: in the first update and the loop's body; acting
    assert len(products) > 20 and set(products) == {tf.bfloat16}
    variables = graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)
    assert {v.dtype.base_dtype for v in variables if v.dtype.is_floating} == {tf.float32}
    assert agent.online.q_values.dtype == tf.float32 == agent.td_target.dtype
