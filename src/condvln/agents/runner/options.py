"""How a run runs: :class:`RunOptions`, the one settings model of ``condvln run``.

The same model is what ``run_agent`` takes and what ``condvln run --config FILE KEY=VALUE``
validates (:data:`condvln.config.SETTINGS`), so a field added here is at once a keyword of
``run_agent``, a key of config files and overrides, and a line of ``condvln config run``.

>>> RunOptions(limit=8, protocol={"panoramic": True}).protocol.panoramic
True
>>> RunOptions(protocol=None, agent_args=None) == RunOptions()
True
>>> RunOptions().step_timeout, RunOptions(step_timeout=2.5).step_timeout, RunOptions(step_timeout=0).step_timeout
(60.0, 2.5, None)
>>> RunOptions(video_format="avi")
Traceback (most recent call last):
...
condvln.errors.ConfigError: video format must be 'mp4' or 'gif', got 'avi'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from condvln.agents.base import DEFAULT_STEP_TIMEOUT
from condvln.errors import ConfigError
from condvln.sim.protocol import ObservationProtocol

VIDEO_FORMATS = ("mp4", "gif")

MAX_STEP_TIMEOUT = 1e6
"""The largest step timeout (seconds, about 11.6 days; the interval timer's range is finite)."""

Progress = Callable[[int, int], None]
"""``progress(done, total)``, called after each finished (or skipped) episode."""


def check_video_format(video_format: str) -> str:
    """``video_format`` if it is one of :data:`VIDEO_FORMATS`, else a :class:`ConfigError`."""
    if video_format not in VIDEO_FORMATS:
        raise ConfigError(f"video format must be 'mp4' or 'gif', got {video_format!r}")
    return video_format


class RunOptions(BaseModel):
    """Settings of a run (the agent, dataset and output folder are arguments of their own).

    Attributes:
        split: Split to run.
        limit: Run only the first N episodes of the split (``null``: all).
        seed: Run seed; each episode's seeds derive from ``(seed, episode_id)``.
        protocol: The observation protocol (field of view, view range, noise, map access, …).
        agent_args: Keyword arguments of the agent's constructor (of the HTTP client for a URL:
            ``connect_timeout``, ``read_timeout``, ``max_response_bytes``).
        batch_size: Episodes each worker steps in lockstep with one ``act_batch`` call (agents
            without ``act_batch`` run one at a time).
        step_timeout: Seconds one ``reset`` / ``act`` / ``act_batch`` call may take, and one
            request to an agent server (``/info`` included, connecting and reading the whole
            answer); a slower call ends its episode with status ``timeout``. Default 60;
            ``0`` (or ``null``): no limit.
        fail_fast: Stop at the first episode the agent fails.
        resume: Skip the episodes the run folder already finished; ``false`` starts over.
        videos: Write a video of each of the first N episodes into ``videos/``.
        video_format: ``mp4`` or ``gif``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    split: str = "val_unseen"
    limit: int | None = Field(None, ge=1)
    seed: int = Field(0, ge=0)
    protocol: ObservationProtocol = ObservationProtocol()
    agent_args: dict[str, Any] = {}
    batch_size: int = Field(1, ge=1)
    step_timeout: float | None = Field(
        DEFAULT_STEP_TIMEOUT, ge=0, le=MAX_STEP_TIMEOUT, allow_inf_nan=False
    )
    fail_fast: bool = False
    resume: bool = True
    videos: int = Field(0, ge=0)
    video_format: str = Field("mp4", json_schema_extra={"enum": list(VIDEO_FORMATS)})

    @field_validator("video_format")
    @classmethod
    def _known_video_format(cls, value: str) -> str:
        return check_video_format(value)

    @field_validator("step_timeout")
    @classmethod
    def _zero_is_no_limit(cls, value: float | None) -> float | None:
        return value or None

    @field_validator("protocol", "agent_args", mode="before")
    @classmethod
    def _none_is_default(cls, value: Any, info: ValidationInfo) -> Any:
        return cls.model_fields[info.field_name].get_default() if value is None else value
