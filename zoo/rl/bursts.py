"""An off-policy agent trained in bursts: environment steps, then K updates in one run.

A burst is Stable-Baselines3's ``train_freq`` and ``gradient_steps``:
``train_every`` epsilon-greedy environment steps into the replay buffer, then the
agent's ``updates_per_run`` updates on batches drawn from it, fed at once and
taken in one ``session.run`` (:func:`zoo.rl.dqn.dqn_update`), which also returns
the greedy action for the observation the next environment step starts from.
:class:`BurstRunner` is the step of :func:`zoo.training.run_steps`, so the loop's
logging, NaN guard and checkpoints come with it. A checkpoint
(:class:`zoo.rl.replay.RolloutCheckpoint`) may fall inside a burst: the updates
taken, read from the agent's counter when training starts, say where in its burst
the run stands, and a resumed run takes the burst's remaining updates first,
without environment steps, to the same numbers as a run never stopped.

Usage::

    agent = dqn_update(spec.n_observations, spec.n_actions, updates_per_run=128)
    ...                                   # a session, agent.start_op, a Rollout
    runner = BurstRunner(session, agent, rollout, batch_size=64, train_every=256,
                         learning_starts=1000,
                         learning_rate=linear_decay(2.3e-3, 0.0, steps))
    logged, updates_per_second = runner.train(steps, checkpoints)
    returns = evaluate(env_id, runner.act, episodes=20, seed=0)
"""

from layers.checks import int_problem, require
from layers.errors import ZooError
from zoo import training
from zoo.rl.returns import mean_of_last


def linear_decay(start, end, steps):
    """Returns ``rate(updates)``: ``start`` at 0 updates, falling linearly to ``end``
    at ``steps`` (a learning-rate schedule for :class:`BurstRunner`)."""
    return lambda updates: end + (start - end) * (1 - updates / steps)


class BurstRunner:
    """Trains an agent in bursts against its rollout; see the module docstring.

    Args:
        session: a session of the agent's graph, its variables initialized (or
            restored by the checkpoint :meth:`train` is given).
        agent: a :class:`zoo.rl.dqn.DQNUpdate` (or an object with its
            ``batch``, ``act_observations``, ``learning_rate``, ``train_op``,
            ``losses``, ``next_action``, ``greedy_action``, ``count``,
            ``updates``, ``updates_per_run`` and ``stacks``).
        rollout: the :class:`zoo.rl.replay.Rollout` that steps the environment
            and holds the replay buffer.
        batch_size: transitions per update.
        train_every: environment steps before each burst.
        learning_starts: environment steps before the first burst, besides its
            ``train_every`` (a warm-up that fills the buffer).
        learning_rate: None (the agent's default rate), or ``rate(updates)``:
            the rate of a run that starts after ``updates`` updates (such as
            :func:`linear_decay`), set before each ``session.run``.

    Attributes:
        updates: the updates taken (None until the first run reads the agent's
            counter).

    Raises:
        ZooError: ``batch_size`` or ``train_every`` is not an int >= 1,
            ``learning_starts`` not an int >= 0, ``learning_rate`` neither None
            nor callable.
    """

    def __init__(
        self,
        session,
        agent,
        rollout,
        *,
        batch_size,
        train_every,
        learning_starts=0,
        learning_rate=None,
    ):
        for name, value, minimum in (
            ("batch_size", batch_size, 1),
            ("train_every", train_every, 1),
            ("learning_starts", learning_starts, 0),
        ):
            problem = int_problem(value, minimum, name=name)
            require("BurstRunner", problem, f"pass {name}={minimum} or more")
        if learning_rate is not None and not callable(learning_rate):
            raise ZooError(
                f"BurstRunner: expected learning_rate to be None or rate(updates), found "
                f"{learning_rate!r}; pass e.g. linear_decay(1e-3, 0.0, steps)"
            )
        self.session, self.agent, self.rollout = session, agent, rollout
        self.batch_size, self.train_every = batch_size, train_every
        self.learning_starts, self.learning_rate = learning_starts, learning_rate
        feeds = [*agent.batch, agent.act_observations, agent.count]
        if learning_rate is not None:
            feeds.append(agent.learning_rate)
        fetches = [agent.train_op, agent.losses, agent.next_action]
        self._train = session.make_callable(fetches, feeds)
        self._greedy = session.make_callable(agent.greedy_action, [agent.act_observations])
        self.updates = None
        self._next_action = None  # the greedy action the last run computed, unused yet

    def act(self, observation):
        """Returns the online network's greedy action for one observation."""
        return self._greedy(observation[None])[0]

    def train(self, steps, checkpoints=None, *, before_run=None, **loop_options):
        """Trains ``steps`` updates in bursts with :func:`zoo.training.run_steps`.

        Args:
            steps: updates in all (a resumed run counts those taken).
            checkpoints: optional :class:`zoo.rl.replay.RolloutCheckpoint`.
            before_run: optional callable run before each call of the step (where
                a worker process may stop: ``processes.stop_if_asked``).
            **loop_options: ``log_every``, ``desc``, ``on_log``, ``writer``,
                ``nan_guard`` of :func:`zoo.training.run_steps`.

        Returns:
            ``(logged, updates_per_second)`` as :func:`zoo.training.run_steps`.
        """
        self.updates, self._next_action = None, None  # read after the restore

        def run_step(count, with_loss):
            if before_run is not None:
                before_run()
            return self.run(count, with_loss)

        return training.run_steps(
            run_step,
            steps,
            checkpoints,
            steps_per_run=self.agent.updates_per_run,
            **loop_options,
        )

    def run(self, count, with_loss):
        """Takes ``count`` updates, each burst's environment steps before its first.

        The step of :func:`zoo.training.run_steps` (``count`` at most
        ``updates_per_run``; a run never crosses the end of a burst, so a
        ``count`` that does is split in two).

        Returns:
            With ``with_loss``, ``(losses, metrics)``: the ``count`` losses and,
            for each update, ``env_steps``, ``episodes``, ``mean_return_100`` (of
            the last 100 episodes, None before the first) and ``epsilon``; else
            None.
        """
        if self.updates is None:
            self.updates = int(self.session.run(self.agent.updates))
        updates_per_run = self.agent.updates_per_run
        losses = []
        while len(losses) < count:
            taken = self.updates % updates_per_run  # of the burst under way
            if taken == 0:
                self._explore()
            size = min(count - len(losses), updates_per_run - taken)
            losses += self._update(size)
            self.updates += size
        if not with_loss:
            return None
        rollout = self.rollout
        metrics = {
            "env_steps": rollout.env_steps,
            "episodes": len(rollout.returns),
            "mean_return_100": mean_of_last(rollout.returns),
            "epsilon": rollout.epsilon_now(),
        }
        return losses, {name: [value] * count for name, value in metrics.items()}

    def _explore(self):
        """The environment steps before a burst (and the warm-up before the first)."""
        warm_up = max(self.learning_starts - self.rollout.env_steps, 0)
        for _ in range(warm_up + self.train_every):
            self.rollout.step(self._act)
            self._next_action = None  # computed for the observation just left

    def _act(self, observation):
        if self._next_action is not None:
            return self._next_action
        return self.act(observation)

    def _update(self, count):
        """One ``session.run`` of ``count`` updates; returns their losses."""
        transitions = self.rollout.sample(count * self.batch_size)
        observation = self.rollout.observation[None]  # the next step acts on it
        feeds = [*self.agent.stacks(transitions, count), observation, count]
        if self.learning_rate is not None:
            feeds.append(self.learning_rate(self.updates))
        with self.rollout.timed("train"):
            _, losses, next_action = self._train(*feeds)
        self._next_action = int(next_action[0])  # the next step's greedy action
        return list(losses)
