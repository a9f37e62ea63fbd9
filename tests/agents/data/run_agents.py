"""Agents that ``condvln run`` accepts in every shape, and one that fails half its episodes."""

STOP, FORWARD, LEFT = 0, 1, 2


class Walker:
    """Walk ``patience`` steps, turning after a bump, then stop."""

    def __init__(self, patience=12):
        self.patience = patience

    def reset(self, episode):
        self.last = min(self.patience, episode.step_budget - 1)

    def act(self, observation):
        if observation.step >= self.last:
            return STOP
        return LEFT if observation.collided else FORWARD


class Stroller(Walker):
    """Another agent with the same interface (a different class behind the same file)."""

    def act(self, observation):
        return STOP if observation.step >= self.last else FORWARD


class BatchOnly:
    """Has ``act_batch`` and no ``act``: stepped in lockstep by the runner."""

    def __init__(self):
        self.steps = {}

    def reset(self, episode):
        self.steps[episode.episode_id] = 0

    def act_batch(self, observations, episode_ids):
        actions = []
        for observation, episode_id in zip(observations, episode_ids):
            actions.append(STOP if observation.step >= 8 else FORWARD)
            self.steps[episode_id] += 1
        return actions


class HabitatDicts:
    """Reads habitat-lab observation dicts (``observation_format = "habitat"``)."""

    observation_format = "habitat"

    def reset(self, episode):
        self.steps = 0

    def act(self, observation):
        assert "compass" in observation and "instruction" in observation
        self.steps += 1
        return STOP if self.steps > 6 else FORWARD


class Trained(Walker):
    """Learns its patience from the train split before the first episode (``fit``)."""

    needs_training_data = True

    def fit(self, dataset_dir):
        self.patience = 5 + len(list(dataset_dir.iterdir())) % 5


def make_walker(patience=12):
    """A factory function, not a class."""
    return Walker(patience)


class Crashy(Walker):
    """Raises in ``act`` in every episode with an even id."""

    def reset(self, episode):
        super().reset(episode)
        self.bad = episode.episode_id % 2 == 0

    def act(self, observation):
        if self.bad and observation.step == 3:
            raise RuntimeError("boom")
        return super().act(observation)
