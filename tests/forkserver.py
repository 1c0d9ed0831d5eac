"""Test subprocesses forked from a server that has already imported TensorFlow.

A subprocess that runs one of our scripts spends about 4 CPU-seconds importing
TensorFlow (and Keras, and matplotlib through Keras) before its first line of work;
the conformance suite alone starts some 40. :func:`popen` starts the same command as
a child of a server process (one per test process, started on first use) that did
that import once, the way the scripts do it (:func:`experiments.harness.startup.
import_tensorflow`) and nothing else: no graph, no session, no eager context, so the
fork copies no TensorFlow runtime. The child then takes the command's environment,
working directory, standard streams, session and ``sys.argv`` and runs it as
``python`` would (``-c CODE``, ``-m MODULE`` or a script path), exit status and signal
deaths included. A command that :meth:`zoo.parallel.loopback.PrivateNetwork.command`
wrapped (a local cluster's task in its private network) is forked too: the child joins
the network namespace (a forked child is single-threaded, as ``setns`` needs), then runs
the inner command.

What such a child cannot show, a test keeps a real ``subprocess``: what a script
imports (``--help`` imports no TensorFlow), TensorFlow's start-up lines, another
``TF_CPP_MIN_LOG_LEVEL`` or ``TF_USE_LEGACY_KERAS`` (:func:`popen` falls back to
``subprocess.Popen`` for those environments).
"""

import atexit
import functools
import json
import os
import pathlib
import random
import runpy
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types

from experiments.harness import startup
from zoo.parallel import launcher, loopback

REPO = pathlib.Path(__file__).resolve().parents[1]
_HEADER = struct.Struct("!I")
_server = None  # this test process's (process, socket path)


def popen(args, *, env=None, cwd=None, stdin=None, stdout=None, stderr=None,
          start_new_session=False, text=False):  # fmt: skip
    """``subprocess.Popen(args, ...)`` for ``[sys.executable, ...]`` commands, forked
    from the server when the environment allows (see the module's docstring).

    Args:
        args: ``[sys.executable, "-c", code, ...]``, ``[sys.executable, "-m", module,
            ...]`` or ``[sys.executable, script, ...]``, or one of them wrapped by
            ``PrivateNetwork.command``.
        env, cwd, start_new_session: as for ``subprocess.Popen``.
        stdin: None (this process's), ``subprocess.DEVNULL`` or an open file.
        stdout, stderr: the same, or ``subprocess.PIPE`` (read through ``communicate``);
            stderr also ``subprocess.STDOUT``.
        text: pipes in text mode.

    Returns:
        A :class:`Forked` (or a ``subprocess.Popen``): ``pid``, ``poll()``,
        ``wait(timeout)``, ``communicate(timeout)``, ``send_signal``, ``kill``,
        ``returncode``, ``stdout`` and ``stderr``.
    """
    env = dict(os.environ if env is None else env)
    level = env.get("TF_CPP_MIN_LOG_LEVEL", "2")
    network, command = _in_network(args)
    if command[0] != sys.executable or level != "2" or "TF_USE_LEGACY_KERAS" in env:
        return subprocess.Popen(args, env=env, cwd=cwd, stdin=stdin, stdout=stdout,
                                stderr=stderr, start_new_session=start_new_session,
                                text=text)  # fmt: skip
    if "TF_CPP_MIN_LOG_LEVEL" not in env:  # the script would set it as it imports
        env.update(startup.CHOSEN_ENVIRONMENT)
    pipes = {name: os.pipe() for name, stream in (("stdout", stdout), ("stderr", stderr))
             if stream == subprocess.PIPE}  # fmt: skip
    given = {"stdin": stdin, "stdout": stdout, "stderr": stderr}
    given.update({name: write for name, (_, write) in pipes.items()})
    streams = [_fd(given["stdin"], 0), _fd(given["stdout"], 1)]
    streams.append((streams[1][0], False) if stderr == subprocess.STDOUT
                   else _fd(given["stderr"], 2))  # fmt: skip
    request = {"argv": [str(a) for a in command[1:]], "env": env, "network": network,
               "cwd": str(cwd or os.getcwd()), "session": start_new_session}  # fmt: skip
    payload = json.dumps(request).encode()
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(_server_path())
    socket.send_fds(connection, [_HEADER.pack(len(payload))], [fd for fd, _ in streams])
    connection.sendall(payload)
    for fd, close in streams:
        if close:
            os.close(fd)
    mode = "r" if text else "rb"
    readers = {name: os.fdopen(read, mode) for name, (read, _) in pipes.items()}
    return Forked(args, connection, **readers)


def fork_cluster_tasks(monkeypatch):
    """Makes each ``LocalCluster`` the test makes through ``zoo.parallel.launcher``
    (``experiments.ps``'s launcher, run in the test's process) start its tasks with
    :func:`popen`."""
    forked = functools.partial(launcher.LocalCluster, popen=popen)
    monkeypatch.setattr(launcher, "LocalCluster", forked)


def processes_naming(path):
    """Pids of the live processes but this one whose command line or open files name
    ``path`` (a forked child's command line is the server's; its log names the run)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                alive = f.read().rsplit(")", 1)[1].split()[0] != "Z"
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                names = [f.read().decode(errors="replace")]
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:  # gone meanwhile
            continue
        names += [_target(f"/proc/{pid}/fd/{fd}") for fd in fds]
        if alive and int(pid) != os.getpid() and any(str(path) in n for n in names):
            found.append(int(pid))
    return found


def _target(link):
    try:
        return os.readlink(link)
    except OSError:  # closed meanwhile
        return ""


class Forked:
    """A child of the fork server, seen as a ``subprocess.Popen`` is."""

    def __init__(self, args, connection, stdout=None, stderr=None):
        self.args, self.returncode, self.stdout, self.stderr = args, None, stdout, stderr
        self._connection, self._lines = connection, connection.makefile("r")
        self.pid = int(self._lines.readline())

    def poll(self):
        """The exit status (``-signal`` for a signal's death), or None while it runs."""
        if self.returncode is None and select.select([self._connection], [], [], 0)[0]:
            self._read_status()
        return self.returncode

    def wait(self, timeout=None):
        """Waits for the exit; raises ``subprocess.TimeoutExpired`` after ``timeout`` s."""
        if self.returncode is None:
            if not select.select([self._connection], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(self.args, timeout)
            self._read_status()
        return self.returncode

    def communicate(self, timeout=None):
        """Reads the pipes to their end, then waits: (stdout, stderr), None for no pipe."""
        deadline = None if timeout is None else time.monotonic() + timeout
        chunks = {pipe: [] for pipe in (self.stdout, self.stderr) if pipe is not None}
        while open_ := [pipe for pipe in chunks if not pipe.closed]:
            left = None if deadline is None else max(0, deadline - time.monotonic())
            ready = select.select(open_, [], [], left)[0]
            if not ready:
                raise subprocess.TimeoutExpired(self.args, timeout)
            for pipe in ready:
                chunk = os.read(pipe.fileno(), 1 << 16)
                if chunk:
                    chunks[pipe].append(chunk)
                else:
                    pipe.close()
        self.wait(None if deadline is None else max(0, deadline - time.monotonic()))
        text = {pipe: b"".join(parts) for pipe, parts in chunks.items()}
        return tuple(None if pipe is None else _decoded(text[pipe], pipe)
                     for pipe in (self.stdout, self.stderr))  # fmt: skip

    def send_signal(self, signum):
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def _read_status(self):
        self.returncode = int(self._lines.readline())
        self._lines.close()
        self._connection.close()


def _in_network(args):
    """``(holder pid, command)`` of a command ``PrivateNetwork.command`` wrapped,
    ``(None, args)`` of any other."""
    if list(args[:4]) == [sys.executable, "-I", loopback.__file__, "join"]:
        return int(args[4]), args[6:]
    return None, args


def _fd(stream, default):
    """(fd to send, whether to close it here once sent) for a Popen-style stream: None,
    DEVNULL, an open file or a pipe's write end (an int)."""
    if stream is None:
        return default, False
    if stream == subprocess.DEVNULL:
        return os.open(os.devnull, os.O_RDWR), True
    if isinstance(stream, int):
        return stream, True
    return stream.fileno(), False


def _decoded(data, pipe):
    return data.decode(errors="replace") if "b" not in pipe.mode else data


def _server_path():
    """The socket of this test process's server, started on first use."""
    global _server
    if _server is None or _server[0].poll() is not None:
        directory = tempfile.mkdtemp(prefix="forkserver-")
        path = os.path.join(directory, "socket")
        unset = (*startup.CHOSEN_ENVIRONMENT, "PYTHONPATH", "TF_USE_LEGACY_KERAS")
        env = {k: v for k, v in os.environ.items() if k not in unset}
        with open(path + ".log", "wb") as log:  # the server's own errors
            process = subprocess.Popen([sys.executable, "-m", "tests.forkserver", path],
                                       cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                                       stdout=log, stderr=log)  # fmt: skip
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
        atexit.register(process.kill)
        deadline = time.monotonic() + 120
        while not os.path.exists(path + ".ready"):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{path}.log: the fork server did not start\n"
                                   + pathlib.Path(path + ".log").read_text())  # fmt: skip
            time.sleep(0.05)
        _server = (process, path)
    return _server[1]


# The server ------------------------------------------------------------------------


def serve(path):
    """Imports TensorFlow as the scripts do, then forks a child per connection and
    writes back its pid, later its exit status; ends when its parent does."""
    startup.import_tensorflow()
    parent, base_path = os.getppid(), sys.path[1:]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen()
    pathlib.Path(path + ".ready").touch()
    children = {}  # pid -> connection
    while os.getppid() == parent:
        if select.select([listener], [], [], 0.05)[0]:
            connection, _ = listener.accept()
            (size,), fds = _receive(connection)
            request = json.loads(_exactly(connection, size))
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                listener.close()
                connection.close()
                for other in children.values():
                    other.close()
                _child(request, fds, base_path)
            for fd in fds:
                os.close(fd)
            connection.sendall(f"{pid}\n".encode())
            children[pid] = connection
        _reap(children)


def _receive(connection):
    message, fds, _, _ = socket.recv_fds(connection, _HEADER.size, 3)
    return _HEADER.unpack(message), fds


def _exactly(connection, size):
    data = b""
    while len(data) < size:
        data += connection.recv(size - len(data))
    return data


def _reap(children):
    while children:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        connection = children.pop(pid)
        connection.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
        connection.close()


def _child(request, fds, base_path):
    """Becomes the requested ``python ARGV`` process; never returns."""
    code = 0
    try:
        if request["network"]:
            loopback.join_namespace(request["network"])
        if request["session"]:
            os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        random.seed()
        sys.modules["numpy"].random.seed()
        extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        argv = request["argv"]
        if argv[0] == "-c":
            sys.argv, sys.path[:] = ["-c", *argv[2:]], ["", *extra, *base_path]
            main = types.ModuleType("__main__")
            sys.modules["__main__"] = main
            exec(compile(argv[1], "<string>", "exec"), main.__dict__)
        elif argv[0] == "-m":
            sys.argv, sys.path[:] = ["-m", *argv[2:]], [os.getcwd(), *extra, *base_path]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path[:] = [os.path.dirname(os.path.abspath(argv[0])), *extra, *base_path]
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as stop:
        code = _exit_code(stop.code)
    except BaseException as error:
        _print_traceback(error)
        code = -signal.SIGINT if isinstance(error, KeyboardInterrupt) else 1
    _exit(code)


def _print_traceback(error):
    """The traceback ``python`` prints: from the program's first frame, not ours."""
    frames = error.__traceback__
    while frames and _ours(frames.tb_frame.f_code.co_filename):
        frames = frames.tb_next
    traceback.print_exception(type(error), error, frames)


def _ours(filename):
    name = os.path.basename(filename)
    return filename == __file__ or name.startswith(("runpy", "<frozen"))


def _exit_code(value):
    if value is None or isinstance(value, int):
        return value or 0
    print(value, file=sys.stderr)
    return 1


def _exit(code):
    """Ends as ``python`` does: other threads joined, atexit functions, flushed streams,
    the status (a negative one as death by that signal, as after a KeyboardInterrupt)."""
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


if __name__ == "__main__":
    serve(sys.argv[1])
