"""Asynchronous parameter-server training on TensorFlow's own distributed runtime.

Between-graph replication, DistBelief style: every worker process builds its own
graph, ``tf.compat.v1.train.replica_device_setter`` puts the variables on the ps
tasks, and each worker applies its gradients to them without waiting for the
others. The chief (worker 0) initialises the variables and writes checkpoints;
a worker that dies and restarts finds the variables on the ps and goes on.

TensorFlow's gRPC server listens on every interface, unauthenticated: a server
starts only where loopback is the only interface (the launcher's private
network, :mod:`zoo.parallel.loopback`) or with ``expose=True``. Every wait is bounded.

A cluster is read and checked without TensorFlow by :mod:`zoo.parallel.cluster_spec`
(a dict, JSON, ``TF_CONFIG`` or ``ps=h:p;worker=h:p,h:p``); :func:`parse_cluster`
makes its ``tf.train.ClusterSpec``.

Usage::

    cluster = parse_cluster("ps=127.0.0.1:2222;worker=127.0.0.1:2223")
    server = start_server(cluster, "worker", 0, expose=True)  # a ps: then just wait
    wait_for_ps(cluster, timeout=60)
    stats = train_worker(server, cluster, 0, build, optimizer, last_step=1000,
                         batch_size=50, checkpoint_dir="runs/ps/ckpt", checkpoint_every=100)
"""

import contextlib
import math
import os
import select
import signal
import socket
import threading
import time

import tensorflow as tf

from layers.errors import ZooError
from zoo.parallel import cluster_spec, partitioned
from zoo.training.checkpoints import RunInterrupted, latest_tf_checkpoint
from zoo.training.loop import NonFiniteLossError, signals_caught

v1 = tf.compat.v1


def parse_cluster(spec):
    """Returns the ``tf.train.ClusterSpec`` that ``spec`` describes.

    Args:
        spec: as :func:`zoo.parallel.cluster_spec.parse` takes it: a dict, JSON, or
            ``"ps=host:port,...;worker=host:port,..."``.

    Raises:
        ZooError: as :func:`zoo.parallel.cluster_spec.parse`.
    """
    return tf.train.ClusterSpec(cluster_spec.parse(spec))


def start_server(cluster, job, index, expose=False):
    """Starts this task's ``tf.distribute.Server``.

    TensorFlow's gRPC server listens on every interface of its port (``[::]``)
    without authentication, whatever host the cluster names. So unless
    ``expose`` is set, the task must run where loopback is the only interface
    (the private network namespace the launcher makes, see :mod:`zoo.parallel.loopback`).

    Sets ``GRPC_FAIL_FAST=true`` in this process unless already set: TensorFlow's
    calls to a dead task then fail at once instead of waiting for it forever
    (closing a session whose ps died hangs otherwise).

    Args:
        cluster: a ``tf.train.ClusterSpec`` (see :func:`parse_cluster`).
        job: ``"ps"`` or ``"worker"``.
        index: task index within the job.
        expose: accept listening on every interface (across machines, on a
            private network or behind a firewall).

    Returns:
        The started server; a ps serves until its process ends.

    Raises:
        ZooError: the task is not in the cluster, the network has other
            interfaces than loopback and ``expose`` is False, or TensorFlow
            cannot start the server (its message kept).
        PortInUseError: the task's port is already in use.
    """
    cluster_spec.check_task(cluster.as_dict(), job, index)
    address = cluster.task_address(job, index)
    _, port = cluster_spec.split_address(address)
    interfaces = cluster_spec.network_interfaces()
    if not expose and interfaces != ["lo"]:
        raise ZooError(
            f"{job}:{index}: expected a network with only the loopback interface, since "
            f"TensorFlow's gRPC server listens on every interface ([::]:{port}) without "
            f"authentication, found interfaces {interfaces}; pass --expose to accept "
            "that (keep the machines on a private network or behind a firewall), or "
            "run on one machine through the launcher (no --cluster)"
        )
    if _port_taken(port):
        raise PortInUseError(job, index, address)
    os.environ.setdefault("GRPC_FAIL_FAST", "true")
    try:
        return tf.distribute.Server(cluster, job_name=job, task_index=index, start=True)
    except tf.errors.OpError as err:
        if _port_taken(port):
            raise PortInUseError(job, index, address) from None
        raise ZooError(
            f"{job}:{index}: expected TensorFlow's server to start at {address}, found "
            f"{type(err).__name__}: {err.message}; see TensorFlow's message"
        ) from None


class PortInUseError(ZooError):
    """A task's port was taken; the launcher retries on other ports.

    Attributes:
        address: the task's ``host:port``.
    """

    def __init__(self, job, index, address):
        port = cluster_spec.split_address(address)[1]
        super().__init__(
            f"{job}:{index}: expected port {port} of {address} to be free, found it in "
            "use; stop the process holding it or give this task another port"
        )
        self.address = address


def _port_taken(port):
    """True when binding ``port`` on every interface fails (as TensorFlow would)."""
    probe = socket.socket()
    # As gRPC does: connections of a killed task in TIME_WAIT do not block a restart.
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind(("", port))
    except OSError:
        return True
    finally:
        probe.close()
    return False


# What a gRPC client says first: HTTP/2's connection preface and an empty SETTINGS frame
# (length 0, type 4, no flags, stream 0). A live gRPC server answers with a SETTINGS frame.
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
HTTP2_SETTINGS = 4  # the frame type, byte 3 of a frame's 9-byte header


def grpc_answers(host, port, timeout):
    """Whether a gRPC server at ``host:port`` answers within ``timeout`` seconds.

    A TCP connect is not enough: the kernel accepts connections for a process
    that is stopped (SIGSTOP) or hung, in 1.5 ms. This speaks the first words of
    HTTP/2 and waits for the server's SETTINGS frame, which only a running
    server sends.

    Returns:
        ``"answers"``, ``"silent"`` (connected, no answer in time: stopped or
        hung) or ``"absent"`` (nothing listening).
    """
    deadline = time.monotonic() + timeout
    try:
        connection = socket.create_connection((host, port), timeout=timeout)
    except OSError:
        return "absent"
    with connection:
        try:
            connection.sendall(HTTP2_PREFACE)
            header = b""
            while len(header) < 9:
                connection.settimeout(max(deadline - time.monotonic(), 1e-3))
                chunk = connection.recv(9 - len(header))
                if not chunk:
                    return "absent"  # closed on us: not a gRPC server
                header += chunk
        except TimeoutError:
            return "silent"
        except OSError:
            return "absent"
    return "answers" if header[3] == HTTP2_SETTINGS else "absent"


def wait_for_ps(cluster, timeout, poll=0.2):
    """Waits until every ps task answers as a gRPC server (:func:`grpc_answers`).

    TensorFlow's session creation waits for an absent ps forever, so workers
    call this first, and again before every session they re-create. A ps that
    listens but does not answer (stopped, hung, cut off) is not taken for a
    live one.

    Args:
        cluster: a ``tf.train.ClusterSpec``.
        timeout: seconds to wait in all.
        poll: seconds between attempts, and each attempt's wait for an answer.

    Raises:
        ZooError: a ps task did not answer after ``timeout`` seconds; the
            message names its address, whether it listened, and its log.
    """
    deadline = time.monotonic() + timeout
    for index, address in enumerate(cluster.job_tasks("ps")):
        host, port = cluster_spec.split_address(address)
        while (found := grpc_answers(host, port, poll)) != "answers":
            if time.monotonic() >= deadline:
                seen = (
                    "a process that accepts connections but does not answer (stopped, "
                    "hung, or cut off)"
                    if found == "silent"
                    else "none"
                )
                raise ZooError(
                    f"ps {address}: expected a parameter server answering, found {seen} "
                    f"after {timeout:g} s; see the ps task's log (logs/ps-{index}.log in "
                    "the launcher's run directory), start or resume (SIGCONT) the ps "
                    "task, or fix the ps address in --cluster/TF_CONFIG"
                )
            time.sleep(poll if found == "absent" else 0)


def session_config(index, timeout_s):
    """Returns the worker's ``ConfigProto``: sees only the ps and itself, ops time out."""
    return v1.ConfigProto(
        device_filters=["/job:ps", f"/job:worker/task:{index}"],
        operation_timeout_in_ms=int(timeout_s * 1000),
    )


class _PsCheckingSessionCreator(v1.train.SessionCreator):
    """Checks that the ps listens (bounded wait) before each session is created.

    ``MonitoredSession`` re-creates its session after every ``UnavailableError``,
    forever; with this check a dead ps ends the worker after ``timeout`` seconds.
    """

    def __init__(self, creator, cluster, timeout):
        self._creator, self._cluster, self._timeout = creator, cluster, timeout

    def create_session(self):
        wait_for_ps(self._cluster, self._timeout)
        return self._creator.create_session()


class _WorkerSessionCreator(v1.train.SessionCreator):
    """Waits (polling every second, up to a bound) for the chief to initialise."""

    def __init__(self, scaffold, master, config, index, max_wait_secs):
        self._scaffold = scaffold
        self._master = master
        self._config = config
        self._index = index
        self._max_wait_secs = max_wait_secs

    def create_session(self):
        self._scaffold.finalize()
        manager = v1.train.SessionManager(
            local_init_op=self._scaffold.local_init_op,
            ready_op=self._scaffold.ready_op,
            ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
            recovery_wait_secs=1,
        )
        try:
            return manager.wait_for_session(
                self._master, config=self._config, max_wait_secs=self._max_wait_secs
            )
        except tf.errors.DeadlineExceededError:
            raise ZooError(
                f"worker:{self._index}: expected the chief (worker 0) to initialise the "
                f"variables on the ps within {self._max_wait_secs:g} s, found them "
                "uninitialised; start worker 0, or raise --startup-timeout"
            ) from None


class _ChiefCheckpoints(v1.train.SessionRunHook):
    """The chief's checkpoints: every ``every`` global steps and at the end, all finite.

    A checkpoint is written only when every variable is finite, so a NaN that
    reached the ps (from any worker) never replaces the last good checkpoint.
    """

    def __init__(self, directory, every, global_step):
        self.directory, self.every, self.global_step = directory, every, global_step
        self.saved = None

    def begin(self):
        self.saver = v1.train.Saver(max_to_keep=3)
        self.finite = tf.reduce_all(
            [
                tf.reduce_all(tf.math.is_finite(v))
                for v in v1.global_variables()
                if v.dtype.base_dtype.is_floating
            ]
        )

    def after_create_session(self, session, coord):
        self.saved = int(session.run(self.global_step))

    def after_run(self, run_context, run_values):
        step = int(run_context.session.run(self.global_step))
        if step >= self.saved + self.every:
            self.save(run_context.session, step)

    def end(self, session):
        self.save(session, int(session.run(self.global_step)))

    def save(self, session, step):
        """Writes ``model.ckpt-<step>`` unless it exists or a variable is not finite."""
        if step == self.saved or not session.run(self.finite):
            return
        self.saver.save(session, os.path.join(self.directory, "model.ckpt"), step)
        self.saved = step


def train_worker(
    server,
    cluster,
    index,
    build,
    optimizer,
    *,
    batch_size,
    last_step,
    checkpoint_dir,
    checkpoint_every=1000,
    startup_timeout=60.0,
    operation_timeout=None,
    ps_memory_budget=None,
    log_every=50,
    on_log=None,
    on_session=None,
):
    """Trains asynchronously until the shared global step reaches ``last_step``.

    Every step's loss is checked: a NaN or Inf stops this worker at once with
    :class:`NonFiniteLossError`. SIGINT/SIGTERM stop it after the current step;
    the chief then writes its checkpoint and :class:`RunInterrupted` is raised.

    Args:
        server: this worker's started server (see :func:`start_server`).
        cluster: the ``tf.train.ClusterSpec``.
        index: this worker's task index; 0 is the chief.
        build: ``build() -> (loss, next_feed)``, called under the device setter:
            builds the model and returns its scalar loss and a function that
            returns the feed dict of the next batch.
        batch_size: examples per batch that ``next_feed`` gives.
        optimizer: a ``tf.compat.v1.train.Optimizer``; its slots live on the ps.
        last_step: global step at which every worker stops.
        checkpoint_dir: where the chief writes checkpoints, and restores the
            last one from when it (re)starts; every worker first refuses a
            ``checkpoint`` file there that leads outside it
            (:func:`zoo.training.checkpoints.latest_tf_checkpoint`).
        checkpoint_every: chief checkpoint period in global steps.
        startup_timeout: seconds to wait for the ps (at start and before every
            re-created session), and for the chief's initialisation.
        operation_timeout: seconds one ``session.run`` may take (default
            ``startup_timeout``); a step that takes longer is taken again when
            every ps answers (a straggler), and fails naming the ps tasks that
            do not (a network partition).
        ps_memory_budget: bytes of variables (optimizer slots included) each ps
            task may hold, checked before any session
            (:func:`zoo.parallel.partitioned.check_memory_budget`); None: no check.
        log_every: period in local steps of the logged loss.
        on_log: optional ``on_log(global_step, loss)`` at each logged step.
        on_session: optional ``on_session(global_step)`` each time a session
            is (re)created: after the chief's restore, or once a worker sees
            the variables ready (a restarted ps makes every worker re-create
            its session, and the chief restore the last checkpoint).

    Returns:
        A dict: ``task``, ``local_steps``, ``examples_per_second``, ``seconds``,
        ``losses`` (``[global_step, loss]`` pairs, the global step a logged
        step started from) and ``restored_from`` (the
        checkpoint the chief started from, or None).

    Raises:
        ZooError: a ps is unreachable, the chief never initialised the variables,
            a step outlasted ``operation_timeout`` with a ps task silent, a ps
            task's variables exceed ``ps_memory_budget``, or the ``checkpoint``
            file of ``checkpoint_dir`` names a path outside it.
        NonFiniteLossError: the loss became NaN or Inf.
        RunInterrupted: SIGINT/SIGTERM arrived (after the chief's checkpoint).
    """
    latest = latest_tf_checkpoint(checkpoint_dir)  # before the chief's restore reads it
    wait_for_ps(cluster, startup_timeout)
    is_chief = index == 0
    restored_from = latest if is_chief else None
    with tf.Graph().as_default():
        setter = v1.train.replica_device_setter(
            cluster=cluster, worker_device=f"/job:worker/task:{index}"
        )
        with v1.device(setter):
            global_step = v1.train.get_or_create_global_step()
            loss, next_feed = build()
            # the global step this step starts from, read before its own increment
            start_step = global_step.read_value()
            with v1.control_dependencies([start_step]):
                train_op = optimizer.minimize(loss, global_step=global_step)
        if ps_memory_budget is not None:
            partitioned.check_memory_budget(v1.global_variables(), ps_memory_budget)
        scaffold = v1.train.Scaffold()
        operation_timeout = operation_timeout or startup_timeout
        config = session_config(index, operation_timeout)
        hooks = [v1.train.StopAtStepHook(last_step=last_step)]
        if on_session:
            hooks.append(_SessionCreated(global_step, on_session))
        if is_chief:
            creator = v1.train.ChiefSessionCreator(
                scaffold, server.target, config, checkpoint_dir=checkpoint_dir
            )
            hooks.append(_ChiefCheckpoints(checkpoint_dir, checkpoint_every, global_step))
        else:
            creator = _WorkerSessionCreator(
                scaffold, server.target, config, index, startup_timeout
            )
        creator = _PsCheckingSessionCreator(creator, cluster, startup_timeout)
        losses, local_steps, last_finite = [], 0, None
        with (
            signals_caught(enabled=True) as caught,
            _closed_within(
                v1.train.MonitoredSession(session_creator=creator, hooks=hooks),
                operation_timeout,
            ) as sess,
        ):
            start = time.perf_counter()
            while not sess.should_stop() and not caught:
                try:
                    _, value, step = sess.run([train_op, loss, start_step], next_feed())
                except tf.errors.DeadlineExceededError:
                    _check_ps_answer(index, cluster, operation_timeout)
                    continue  # every ps answers: a slow step, or this worker was stopped
                value, step = float(value), int(step)
                if not math.isfinite(value):
                    raise _non_finite(index, step, value, last_finite, checkpoint_dir)
                last_finite = (step, value)
                if local_steps % log_every == 0:
                    losses.append([step, value])
                    if on_log:
                        on_log(step, value)
                local_steps += 1
            seconds = time.perf_counter() - start
        if caught:
            raise _interrupted(index, caught[0], checkpoint_dir)
    return {
        "task": index,
        "local_steps": local_steps,
        "examples_per_second": local_steps * batch_size / seconds if seconds else 0.0,
        "seconds": seconds,
        "losses": losses,
        "restored_from": restored_from and os.path.basename(restored_from),
    }


@contextlib.contextmanager
def _closed_within(session, timeout):
    """Yields ``session`` and closes it after: at once when the block ends well; when
    an error ends it, waiting at most ``timeout`` seconds (closing a session whose ps
    is stopped or cut off never ends) before the error goes on, the close left to a
    daemon thread."""
    try:
        yield session
    except BaseException as err:
        closer = threading.Thread(
            target=session.__exit__, args=(type(err), err, err.__traceback__), daemon=True
        )
        closer.start()
        closer.join(timeout)
        raise
    session.__exit__(None, None, None)


class _SessionCreated(v1.train.SessionRunHook):
    """Calls ``on_session(global_step)`` after each session is (re)created."""

    def __init__(self, global_step, on_session):
        self.global_step, self.on_session = global_step, on_session

    def after_create_session(self, session, coord):
        self.on_session(int(session.run(self.global_step)))


def _check_ps_answer(index, cluster, timeout, probe_s=2.0):
    """After worker ``index``'s step outlasted ``timeout`` s: raises naming the ps
    tasks that do not answer now (:func:`grpc_answers`), else returns.

    Raises:
        ZooError: a ps task is silent (stopped, hung, cut off) or absent.
    """
    silent = []
    for task, address in enumerate(cluster.job_tasks("ps")):
        host, port = cluster_spec.split_address(address)
        found = grpc_answers(host, port, probe_s)
        if found != "answers":
            silent.append(f"ps {address} (logs/ps-{task}.log) {found}")
    if silent:
        raise ZooError(
            f"worker:{index}: expected a step within the operation timeout of "
            f"{timeout:g} s, found none, with {', '.join(silent)} (stopped, hung, cut "
            "off or gone); resume (SIGCONT) or restart that ps task and --resume from "
            "the last checkpoint, or raise the operation timeout"
        )


def _non_finite(index, step, value, last_finite, checkpoint_dir):
    """Returns the :class:`NonFiniteLossError` of worker ``index`` at global ``step``."""
    checkpoint = latest_tf_checkpoint(checkpoint_dir)
    last = (
        f"last finite loss {last_finite[1]:.6g} at global step {last_finite[0]}"
        if last_finite
        else "no finite loss before it"
    )
    kept = "no checkpoint"
    if checkpoint:
        kept = f"last good checkpoint {checkpoint} left intact"
    return NonFiniteLossError(
        f"worker:{index}: expected a finite loss, found {value} at global step {step}; "
        f"{last}; {kept}; lower the learning rate or check the input data",
        step,
        last_finite,
        checkpoint,
    )


def _interrupted(index, signum, checkpoint_dir):
    """Returns the :class:`RunInterrupted` of worker ``index`` stopped by ``signum``."""
    checkpoint = latest_tf_checkpoint(checkpoint_dir)
    return RunInterrupted(
        f"worker:{index}: interrupted by {signal.Signals(signum).name}; chief checkpoint "
        f"{checkpoint}; the launcher's message says how to resume",
        signum,
        None,
    )


def exit_with_parent(parent, grace_s, poll=0.5, needs=()):
    """Ends this process when process ``parent`` (its launcher) has ended.

    A daemon thread waits for the launcher's end: on Linux on a pidfd of the
    launcher itself, whatever started this process (the launcher, a fork server,
    a wrapper); elsewhere by polling ``os.getppid()``, for a child of the
    launcher. Once the launcher is gone (already at this call too) it sends this
    process SIGTERM (a worker stops after its step, the chief checkpoints) and,
    if the process is still there ``grace_s`` seconds later, exits at once; or
    sooner, once none of the tasks it ``needs`` to finish (a worker's ps, which
    end with the launcher too) is listening: there is nothing left to save to.

    Args:
        parent: the pid of the launcher at start.
        grace_s: seconds between the SIGTERM and the hard exit.
        poll: seconds between checks where there is no pidfd, and between looks
            at ``needs``.
        needs: ``"host:port"`` of the tasks this one needs to finish.

    Raises:
        ZooError: an entry of ``needs`` that is not ``host:port``.
    """
    needed = [
        cluster_spec.split_address(address, "exit_with_parent needs") for address in needs
    ]
    if hasattr(os, "pidfd_open"):
        try:  # the launcher now: not a later process that gets its pid
            launcher = [os.pidfd_open(parent)]
        except ProcessLookupError:
            launcher = []

        def wait():
            if launcher:
                select.select(launcher, [], [])  # readable once the launcher exits

    else:

        def wait():
            while os.getppid() == parent:
                time.sleep(poll)

    def nothing_to_finish():
        answers = (grpc_answers(host, port, poll) for host, port in needed)
        return bool(needed) and all(answer == "absent" for answer in answers)

    def watch():
        wait()
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and not nothing_to_finish():
            time.sleep(min(poll, max(deadline - time.monotonic(), 0)))
        os._exit(128 + signal.SIGTERM)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
