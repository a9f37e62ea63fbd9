"""The window of ``render_mode="human"``: frames shown with pygame, as Gymnasium's own envs do.

pygame comes with ``pip install "condvln[gym]"``. A window needs a display: on Linux and the BSDs
``$DISPLAY`` or ``$WAYLAND_DISPLAY`` (or an ``$SDL_VIDEODRIVER`` chosen on purpose, e.g.
``dummy`` for tests); without one the environment refuses ``"human"`` up front with a one-line
error instead of failing at the first frame.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np
from gymnasium.error import DependencyNotInstalled

from condvln.errors import ConfigError


def missing_display() -> str | None:
    """Why no window can open here (``None`` when one can).

    >>> missing_display() is None or "display" in missing_display()
    True
    """
    if not sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return None
    if any(os.environ.get(k) for k in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER")):
        return None
    return "no display ($DISPLAY and $WAYLAND_DISPLAY are unset)"


class Window:
    """A pygame window sized to the frames, refreshed at most ``fps`` times a second.

    Raises:
        ConfigError: No display.
        DependencyNotInstalled: pygame is not installed.
    """

    def __init__(self, fps: int, title: str = "CondVLN") -> None:
        reason = missing_display()
        if reason:
            raise ConfigError(
                f"render_mode='human' needs a window but there is {reason}; use "
                "render_mode='rgb_array' (e.g. with gymnasium.wrappers.RecordVideo)"
            )
        os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")  # no banner on stdout
        try:
            import pygame
        except ImportError:
            raise DependencyNotInstalled(
                'render_mode="human" needs pygame: pip install "condvln[gym]"'
            ) from None
        self._pygame: Any = pygame
        self.fps = fps
        self.title = title
        self._screen: Any = None
        self._clock: Any = None

    def show(self, frame: np.ndarray) -> None:
        """Draw ``frame`` (uint8 H×W×3) and handle the window's events."""
        pygame = self._pygame
        size = (frame.shape[1], frame.shape[0])
        if self._screen is None:
            pygame.init()
            pygame.display.set_caption(self.title)
            self._clock = pygame.time.Clock()
        if self._screen is None or self._screen.get_size() != size:  # a new episode's layout
            self._screen = pygame.display.set_mode(size)
        surface = pygame.surfarray.make_surface(np.ascontiguousarray(frame.transpose(1, 0, 2)))
        self._screen.blit(surface, (0, 0))
        pygame.event.pump()
        pygame.display.flip()
        self._clock.tick(self.fps)

    def close(self) -> None:
        """Close the window (if it was opened)."""
        if self._screen is not None:
            self._pygame.display.quit()
            self._pygame.quit()
            self._screen = None
