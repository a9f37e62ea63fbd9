"""Test agents served by ``condvln/agent_server.py`` (Python 3.6 syntax, standard library only).

They read observations by attribute, so the same class runs in-process (CondVLN's
``Observation``) and behind the server (decoded JSON records).
"""

import os
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
