"""The built-in simulator: continuous pose over a scene's navigable area, VLN-CE actions.

Actions (VLN-CE): ``STOP`` 0, ``FORWARD`` 1 (0.25 m along the heading), ``TURN_LEFT`` 2 (+15°,
counter-clockwise seen from above: the yaw increases), ``TURN_RIGHT`` 3. The pose is
``(x, z, yaw)``; ``y`` is the floor height of the room under the agent. The yaw is kept as the
start yaw plus a whole number of turns, so turning never drifts.

**Collisions.** A forward move is checked on the navigator's occupancy grid with the exact
segment traversal (:func:`condvln.nav._kernels.segment_clear`): every cell the move crosses must
be in the main navigable region. A blocked move *slides*: it tries the move's projection on the
x axis and on the z axis (the longer first; walls and furniture footprints are axis-aligned in
the built-in sources); when both are blocked it stops short at the farthest clear fraction of
the move (bisection, 1/256 of a step). The agent therefore never passes through a wall or a
piece of furniture.

**Episodes** end on ``STOP`` or when the step budget is used up (every action counts, STOP
included); :meth:`Simulator.step` after the end raises :class:`EpisodeOver`.

**Perception** follows an :class:`~condvln.sim.protocol.ObservationProtocol`: detections of the
objects within range and field of view that are visible (only walls and outside floors block
sight; furniture does not), plus the optional perception noise, drawn from the episode's seeded
generator so runs are reproducible. With pixel ``sensors`` in the protocol the simulator also
renders RGB / depth / semantic images from the scene's composed mesh at every step
(:class:`~condvln.sim.render.Renderer`, built on first use); ``detections=False`` leaves the
symbolic detections out.

>>> from condvln.scene.model import Room, Scene
>>> room = Room(id="r", room_type="bedroom", label="Bedroom",
...             floor_polygon=((0, 0), (4, 0), (4, 3), (0, 3)))
>>> sim = Simulator(Scene(id="s", source="test", rooms=(room,)))
>>> obs = sim.reset((2.0, 0.0, 1.5), 0.0, instruction="Go.", step_budget=3)
>>> obs = sim.step(FORWARD)
>>> [round(c, 6) for c in obs.position], obs.room_type
([2.0, 0.0, 1.25], 'bedroom')
>>> _ = sim.step(TURN_LEFT); _ = sim.step(FORWARD); sim.done, sim.trajectory().stop
(True, False)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from condvln.dataset.follower import FORWARD as FORWARD
from condvln.dataset.follower import FORWARD_STEP, TURN_DEGREES
from condvln.dataset.follower import LEFT as TURN_LEFT
from condvln.dataset.follower import RIGHT as TURN_RIGHT
from condvln.dataset.follower import STOP as STOP
from condvln.errors import CondVLNError, ConfigError
from condvln.nav import GridNavigator
from condvln.nav import _kernels as nav_kernels
from condvln.scene.model import Scene
from condvln.sim import _kernels
from condvln.sim.mapview import MapView
from condvln.sim.protocol import Detection, Observation, ObservationProtocol, Vec3, parse_protocol
from condvln.sim.render import Renderer, SemanticTable

ACTIONS = (STOP, FORWARD, TURN_LEFT, TURN_RIGHT)
"""The action ids, VLN-CE order."""

TURN = math.radians(TURN_DEGREES)
"""One turn in radians."""

DEFAULT_BUDGET = 500
"""Step budget when an episode records none (VLN-CE's ``max_episode_steps``)."""

_TURNS_PER_CIRCLE = round(360.0 / TURN_DEGREES)
_BISECTIONS = 8


class EpisodeOver(CondVLNError):
    """An action after the episode ended (STOP called or budget used up)."""


@dataclass(frozen=True, slots=True)
class Trajectory:
    """What an episode recorded: the start pose first, then one pose per action.

    Attributes:
        positions: ``len(actions) + 1`` positions ``(x, y, z)``.
        headings: Yaw after each pose, same length as ``positions``.
        actions: The actions taken.
        stop: Whether the episode ended with STOP (not by the budget).
    """

    positions: tuple[Vec3, ...]
    headings: tuple[float, ...]
    actions: tuple[int, ...]
    stop: bool


def _wrap(angle: float) -> float:
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


class _SceneObjects:
    """Object arrays of one scene for vectorised perception (the simulator's side only)."""

    def __init__(self, scene: Scene) -> None:
        objects = list(scene.objects())
        centres = np.array([o.center for o in objects], dtype=np.float64).reshape(-1, 3)
        self.xz = np.ascontiguousarray(centres[:, [0, 2]])
        self.positions: tuple[Vec3, ...] = tuple(
            (float(x), float(y), float(z)) for x, y, z in centres
        )
        self.sizes: tuple[Vec3 | None, ...] = tuple(
            None if o.box is None else tuple(float(s) for s in o.box.size)  # type: ignore[misc]
            for o in objects
        )
        self.categories = tuple(o.category for o in objects)
        self.vocabulary = tuple(sorted(set(self.categories)))
        index = {c: i for i, c in enumerate(self.vocabulary)}
        self.category_index = np.array([index[c] for c in self.categories], dtype=np.intp)
        self.bearing = np.zeros(len(objects))
        self.depth = np.zeros(len(objects))

    def __len__(self) -> int:
        return len(self.categories)


class Simulator:
    """A VLN-CE-style simulator over one scene (see the module notes).

    Args:
        scene: The scene.
        protocol: The observation protocol (defaults when omitted).
        navigator: A prebuilt grid navigator of ``scene`` (built when omitted).
    """

    def __init__(
        self,
        scene: Scene,
        protocol: ObservationProtocol | dict[str, Any] | None = None,
        *,
        navigator: GridNavigator | None = None,
    ) -> None:
        self.scene = scene
        self.navigator = navigator or GridNavigator(scene)
        self.protocol = parse_protocol(protocol)
        self._objects = _SceneObjects(scene)
        area = self.navigator.area
        frame = area.frame
        self._grid = (float(frame.origin[0]), float(frame.origin[1]), float(frame.cell_size))
        self._blocked = np.ascontiguousarray(~area.free)
        self._free_room = nav_kernels.free_room(area.free)
        self._view = np.ascontiguousarray(area.view_blocked, dtype=np.bool_)
        self._room_types = tuple(room.room_type for room in scene.rooms)
        self._map: MapView | None = None
        self._renderer: Renderer | None = None
        self._rng = np.random.default_rng(0)
        self._instruction = ""
        self._budget = DEFAULT_BUDGET
        self._reset_state((0.0, 0.0, 0.0), 0.0)

    # --- episode -----------------------------------------------------------------------------

    def reset(
        self,
        position: Sequence[float],
        yaw: float,
        *,
        instruction: str,
        step_budget: int = DEFAULT_BUDGET,
        seed: int | Sequence[int] = 0,
    ) -> Observation:
        """Start an episode at ``position`` facing ``yaw``; returns the first observation.

        Args:
            position: Start position ``(x, y, z)`` (kept as given, not snapped).
            yaw: Start heading in radians.
            instruction: The instruction text the agent reads.
            step_budget: Actions allowed (STOP included).
            seed: Seed of the perception noise (e.g. ``(run_seed, episode_id)``).

        Raises:
            ConfigError: A budget below 1.
        """
        if step_budget < 1:
            raise ConfigError(f"step budget must be at least 1, got {step_budget}")
        self._instruction = instruction
        self._budget = int(step_budget)
        self._rng = np.random.default_rng(seed)
        self._reset_state(tuple(float(c) for c in position), float(yaw))  # type: ignore[arg-type]
        return self._observe(False)

    def _reset_state(self, position: Vec3, yaw: float) -> None:
        self._x, self._y, self._z = position
        self._yaw0 = _wrap(yaw)
        self._turns = 0
        self._positions: list[Vec3] = [position]
        self._headings: list[float] = [self._yaw0]
        self._actions: list[int] = []
        self._stopped = False

    @property
    def yaw(self) -> float:
        """Current heading in radians, in [−π, π)."""
        return _wrap(self._yaw0 + self._turns * TURN)

    @property
    def position(self) -> Vec3:
        """Current position."""
        return (self._x, self._y, self._z)

    @property
    def steps(self) -> int:
        """Actions taken in this episode."""
        return len(self._actions)

    @property
    def done(self) -> bool:
        """Whether the episode is over (STOP called or budget used up)."""
        return self._stopped or len(self._actions) >= self._budget

    def step(self, action: int) -> Observation:
        """Apply ``action`` and return the new observation.

        Raises:
            EpisodeOver: The episode already ended.
            ConfigError: An unknown action id.
        """
        if self.done:
            raise EpisodeOver("the episode is over (STOP called or step budget used up)")
        collided = False
        if action == FORWARD:
            collided = self._forward()
        elif action == TURN_LEFT:
            self._turns = (self._turns + 1) % _TURNS_PER_CIRCLE
        elif action == TURN_RIGHT:
            self._turns = (self._turns - 1) % _TURNS_PER_CIRCLE
        elif action == STOP:
            self._stopped = True
        else:
            raise ConfigError(
                f"unknown action {action!r} (known: 0 STOP, 1 FORWARD, 2 LEFT, 3 RIGHT)"
            )
        self._actions.append(int(action))
        self._positions.append((self._x, self._y, self._z))
        self._headings.append(self.yaw)
        return self._observe(collided)

    def trajectory(self) -> Trajectory:
        """The episode so far."""
        return Trajectory(
            tuple(self._positions), tuple(self._headings), tuple(self._actions), self._stopped
        )

    @property
    def start_pose(self) -> tuple[Vec3, float]:
        """The episode's start position and yaw (the frame of habitat's GPS and compass)."""
        return self._positions[0], self._yaw0

    def renderer(self) -> Renderer:
        """The pixel renderer of this scene (its composed mesh is built on first use)."""
        if self._renderer is None:
            self._renderer = Renderer.from_scene(self.scene)
        return self._renderer

    def semantic_table(self) -> SemanticTable:
        """What each semantic pixel value denotes (object id, category, kind)."""
        return self.renderer().table

    def map_view(self) -> MapView:
        """The planner view of this scene's navigable map (shared by episodes)."""
        if self._map is None:
            self._map = MapView(self.navigator)
        return self._map

    # --- motion ------------------------------------------------------------------------------

    def _clear(self, x: float, z: float, nx: float, nz: float) -> bool:
        return nav_kernels.segment_clear(self._blocked, self._free_room, *self._grid, x, z, nx, nz)

    def _forward(self) -> bool:
        """Move forward (sliding or stopping short at obstacles); True when it collided."""
        yaw = self.yaw
        x, z = self._x, self._z
        dx, dz = -FORWARD_STEP * math.sin(yaw), -FORWARD_STEP * math.cos(yaw)
        if self._clear(x, z, x + dx, z + dz):
            self._place(x + dx, z + dz)
            return False
        slides = ((dx, 0.0), (0.0, dz)) if abs(dx) >= abs(dz) else ((0.0, dz), (dx, 0.0))
        for sx, sz in slides:
            if abs(sx) + abs(sz) > 1e-9 and self._clear(x, z, x + sx, z + sz):
                self._place(x + sx, z + sz)
                return True
        lo, hi = 0.0, 1.0
        for _ in range(_BISECTIONS):
            mid = 0.5 * (lo + hi)
            if self._clear(x, z, x + mid * dx, z + mid * dz):
                lo = mid
            else:
                hi = mid
        if lo > 0.0:
            self._place(x + lo * dx, z + lo * dz)
        return True

    def _place(self, x: float, z: float) -> None:
        self._x, self._y, self._z = self.navigator.point(x, z)

    # --- perception --------------------------------------------------------------------------

    def _room_index(self) -> int:
        ox, oz, cell = self._grid
        row, col = math.floor((self._z - oz) / cell), math.floor((self._x - ox) / cell)
        index = self.navigator.area.room_index
        if 0 <= row < index.shape[0] and 0 <= col < index.shape[1]:
            return int(index[row, col])
        return -1

    def _observe(self, collided: bool) -> Observation:
        protocol = self.protocol
        yaw = self.yaw
        detections = self._detect(yaw) if protocol.detections else []
        room_type = None
        if protocol.room_type:
            index = self._room_index()
            room_type = self._room_types[index] if index >= 0 else None
        pose = protocol.pose
        images = self.renderer().render(self.position, yaw, protocol) if protocol.sensors else {}
        return Observation(
            instruction=self._instruction,
            step=len(self._actions),
            position=(self._x, self._y, self._z) if pose else None,
            heading=yaw if pose else None,
            room_type=room_type,
            detections=tuple(detections),
            collided=collided,
            images=images,
        )

    def _detect(self, yaw: float) -> list[Detection]:
        """The symbolic detections at the current pose (with the protocol's noise)."""
        protocol, objects = self.protocol, self._objects
        found = _kernels.detect(
            self._view,
            *self._grid,
            self._x,
            self._z,
            yaw,
            objects.xz,
            protocol.half_fov,
            protocol.view_range,
            objects.bearing,
            objects.depth,
        )
        detections = [self._detection(int(i), objects.categories[i]) for i in found]
        if protocol.noisy and len(objects):
            detections = self._perturb(detections, found, yaw)
        return detections

    def _detection(self, i: int, category: str) -> Detection:
        objects, protocol = self._objects, self.protocol
        return Detection(
            category,
            float(objects.bearing[i]),
            float(objects.depth[i]),
            objects.positions[i] if protocol.pose else None,
            objects.sizes[i] if protocol.boxes else None,
        )

    def _perturb(
        self, detections: list[Detection], found: np.ndarray, yaw: float
    ) -> list[Detection]:
        """Apply misses, confusions and one possible false detection (seeded per episode)."""
        protocol, objects, rng = self.protocol, self._objects, self._rng
        n = len(detections)
        keep = rng.random(n) >= protocol.miss_rate
        swap = rng.random(n) < protocol.confusion_rate
        vocab = objects.vocabulary
        shift = rng.integers(1, max(len(vocab), 2), size=n)
        out = []
        for k in range(n):
            if not keep[k]:
                continue
            det = detections[k]
            if swap[k] and len(vocab) > 1:
                own = objects.category_index[found[k]]
                det = self._detection(int(found[k]), vocab[(own + shift[k]) % len(vocab)])
            out.append(det)
        if rng.random() < protocol.false_detection_rate:
            out.append(self._false_detection(yaw))
        return out

    def _false_detection(self, yaw: float) -> Detection:
        """A spurious detection: a random scene object's category and size at a random spot."""
        protocol, objects, rng = self.protocol, self._objects, self._rng
        source = int(rng.integers(len(objects)))
        bearing = float(rng.uniform(-protocol.half_fov, protocol.half_fov))
        depth = float(rng.uniform(0.1 * protocol.view_range, protocol.view_range))
        direction = yaw + bearing
        x = self._x - depth * math.sin(direction)
        z = self._z - depth * math.cos(direction)
        y = objects.positions[source][1]
        return Detection(
            objects.categories[source],
            _wrap(bearing),
            depth,
            (x, y, z) if protocol.pose else None,
            objects.sizes[source] if protocol.boxes else None,
        )
