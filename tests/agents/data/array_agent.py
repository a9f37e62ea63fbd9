"""A test agent that reads image-like numpy arrays from its observations (served remotely)."""


class ArrayAgent(object):
    """Answers a number computed from the ``rgb`` and ``depth`` arrays it receives."""

    def reset(self, episode):
        self.episode_id = episode.episode_id

    def act(self, observation):
        rgb, depth = observation["rgb"], observation.depth
        assert rgb.dtype.str == "|u1" and rgb.shape == (2, 3, 3)
        assert depth.dtype.str == "<f4" and depth.shape == (2, 3, 1)
        return int(rgb.sum() + 1000 * depth.sum())
