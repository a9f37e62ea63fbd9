"""Test agents served by ``condvln/agent_server.py`` (Python 3.6 syntax, standard library only).

They read observations by attribute, so the same class runs in-process (CondVLN's
``Observation``) and behind the server (decoded JSON records).
"""

import os
import struct
import time


class DetectionAgent(object):
    """Deterministic: walks towards the farthest detection, scans when it sees none or collides.

    Args:
        sleep: Seconds to sleep in every ``act`` (emulates a model).
        max_steps: STOP after this many steps.
        fail_episode: Raise in ``act`` of this episode id.
        bad_action: Return this value instead of an action in every episode.
        exit_episode: Raise ``SystemExit`` in ``act`` of this episode id.
        kill_file: When this file exists, delete it and kill the process in ``act``.
        kill_episode: Only kill (see ``kill_file``) in this episode id; None: in any episode.
        log_file: Append ``construct <pid>`` here when constructed, ``reset <pid>`` per reset.
    """

    instruction_source = "original"

    def __init__(
        self,
        sleep=0.0,
        max_steps=40,
        fail_episode=None,
        bad_action=None,
        exit_episode=None,
        kill_file=None,
        log_file=None,
        kill_episode=None,
    ):
        self.sleep = sleep
        self.max_steps = max_steps
        self.fail_episode = fail_episode
        self.bad_action = bad_action
        self.exit_episode = exit_episode
        self.kill_file = kill_file
        self.kill_episode = kill_episode
        self.log_file = log_file
        self._log("construct")

    def _log(self, event):
        if self.log_file:
            with open(self.log_file, "a") as fh:
                fh.write("{} {}\n".format(event, os.getpid()))

    def _kill_now(self):
        if self.kill_episode is not None and self.episode_id != self.kill_episode:
            return False
        return bool(self.kill_file) and os.path.exists(self.kill_file)

    def reset(self, episode):
        self._log("reset")
        self.episode_id = episode.episode_id
        self.last = min(episode.step_budget - 1, self.max_steps)
        self.scan = 2 if episode.seed % 2 else 3

    def act(self, observation):
        if self.sleep:
            time.sleep(self.sleep)
        if self._kill_now():
            os.remove(self.kill_file)
            os._exit(3)
        if self.episode_id == self.fail_episode and observation.step == 2:
            raise ValueError("boom at step 2")
        if self.episode_id == self.exit_episode:
            raise SystemExit(4)
        if self.bad_action is not None:
            return self.bad_action
        if observation.step >= self.last:
            return 0
        detections = observation.detections
        if observation.collided or not detections:
            return self.scan
        farthest = max(detections, key=lambda d: (d.depth, d.category))
        if abs(farthest.bearing) < 0.27:
            return 1
        return 2 if farthest.bearing > 0 else 3


class BatchedDetectionAgent(object):
    """:class:`DetectionAgent` per episode, stepped with ``act_batch`` (one sleep per call)."""

    instruction_source = "original"

    def __init__(self, sleep=0.0, max_steps=40):
        self.sleep = sleep
        self.max_steps = max_steps
        self.agents = {}
        self.calls = 0

    def reset(self, episode):
        agent = DetectionAgent(max_steps=self.max_steps)
        agent.reset(episode)
        self.agents[episode.episode_id] = agent

    def act(self, observation):
        raise RuntimeError("a batched agent is stepped with act_batch")

    def act_batch(self, observations, episode_ids):
        self.calls += 1
        if self.sleep:
            time.sleep(self.sleep)
        return [self.agents[i].act(o) for o, i in zip(observations, episode_ids)]


def _floats(array):
    """The float32 values of a numpy array or of the server's ``EncodedArray`` (no numpy)."""
    if hasattr(array, "tolist"):
        return [float(v) for v in array.reshape(-1).tolist()]
    assert array.dtype == "<f4", array.dtype
    return [float(v) for v in struct.unpack("<{}f".format(len(array.data) // 4), array.data)]


class HabitatAgent(object):
    """Reads habitat-lab observation dicts only; logs what it saw (one JSON line per step).

    Walks forward while the centre depth pixel is beyond 1 m, else turns left; STOPs after
    ``max_steps``. Each log line: episode id, tokens, trajectory id, gps, compass, heading and
    the centre depth.
    """

    instruction_source = "original"
    observation_format = "habitat"

    def __init__(self, log_file, max_steps=12):
        self.log_file = log_file
        self.max_steps = max_steps

    def reset(self, episode):
        self.episode_id = episode.episode_id
        self.steps = 0

    def act(self, observation):
        import json

        depth = observation["depth"]
        height, width = depth.shape[0], depth.shape[1]
        centre = _floats(depth)[(height // 2) * width + width // 2]
        line = {
            "episode_id": self.episode_id,
            "keys": sorted(observation),
            "tokens": observation["instruction"]["tokens"],
            "trajectory_id": observation["instruction"]["trajectory_id"],
            "text": observation["instruction"]["text"],
            "gps": _floats(observation["gps"]),
            "compass": _floats(observation["compass"])[0],
            "heading": _floats(observation["heading"])[0],
            "depth": [getattr(depth.dtype, "str", depth.dtype), list(depth.shape), centre],
        }
        with open(self.log_file, "a") as fh:
            fh.write(json.dumps(line, sort_keys=True) + "\n")
        self.steps += 1
        if self.steps > self.max_steps:
            return 0
        return 1 if centre > 0.1 else 2
