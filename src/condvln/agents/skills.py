"""Shared machinery of the planner-based baselines: memory, matching, exploration, control.

Every baseline here navigates with the :class:`~condvln.sim.mapview.MapView` planner and locates
objects only by seeing them:

* :class:`Memory` turns detections into remembered world objects (category, centre, box, room
  index) and learns the type of a room index by standing in it;
* :func:`match` grounds a :class:`~condvln.program.ast.Ref` in memory with the dataset's rules
  (scope = rooms of the stated type, candidates of the category, a qualifier evaluated against
  the anchor with the same predicate thresholds as :class:`~condvln.graph.RelationConfig`);
* :class:`Explorer` picks the nearest unexplored room (then coverage point) by geodesic distance;
* :class:`SkillAgent` runs a *script*: a generator that yields actions and reads the latest
  observation from ``self.obs``. Skills are sub-generators combined with ``yield from``:
  :meth:`~SkillAgent.go_to` (turn towards the farthest path waypoint in straight reach, step,
  replan after collisions), :meth:`~SkillAgent.look_around`, :meth:`~SkillAgent.explore`,
  :meth:`~SkillAgent.find` and :meth:`~SkillAgent.visit` (find an object, walk to its approach
  point). The agent stops one step before the budget runs out, so STOP is always called.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from condvln.agents.base import EpisodeView, InstructionSource
from condvln.errors import ConfigError
from condvln.graph import RelationConfig
from condvln.graph.relations import (
    DIRECTIONAL_PREDICATES,
    PREDICATES,
    SEMANTIC_PREDICATES,
    Geometry,
    Truth,
    pair_metrics,
    semantic_truths,
)
from condvln.program.ast import Program, Ref
from condvln.program.parse import InstructionParseError, parse
from condvln.program.templates import Phrasing
from condvln.scene.model import AABB, SceneObject
from condvln.sim.mapview import MapView, heading_to
from condvln.sim.protocol import Observation, Vec3
from condvln.sim.simulator import FORWARD, FORWARD_STEP, STOP, TURN, TURN_LEFT, TURN_RIGHT

Script = Generator[int, None, None]
"""A behaviour: yields actions; the observation after each is in ``agent.obs``."""

VISIT_RADIUS = 1.0
"""A coverage waypoint counts as visited once the agent passed within this distance (m)."""

MAX_DETOURS = 40
"""Detour steps (each followed by a replan) allowed on one leg before giving it up."""

HEADING_TOLERANCE = TURN + 1e-9
"""Largest heading error (radians) at which the agent steps forward instead of turning: one
whole turn, so that a path between two lattice headings does not make it zig-zag."""

TURN_COST = 0.01
"""Metres a detour step is charged per turn it needs."""

_HALF_CIRCLE = 12


@dataclass(frozen=True, slots=True)
class Remembered:
    """An object the agent has seen.

    Attributes:
        category: Detected category.
        position: World position of the centre.
        size: Box extent, or ``None``.
        room: Room index holding the centre (``-1`` when none).
    """

    category: str
    position: Vec3
    size: Vec3 | None
    room: int


class Memory:
    """Detections as world objects, and the room types learned by standing in rooms.

    Args:
        map_view: The planner (room indices of positions).
        config: Predicate thresholds for qualifier and relation checks.
    """

    def __init__(self, map_view: MapView, config: RelationConfig | None = None) -> None:
        self.map = map_view
        self.config = config or RelationConfig()
        self.objects: list[Remembered] = []
        self.room_types: dict[int, str] = {}
        self._keys: set[tuple[str, Vec3]] = set()
        self._truths: dict[tuple[int, str, int], Truth] = {}

    def update(self, obs: Observation) -> None:
        """Remember the new detections and the type of the room the agent stands in."""
        if obs.position is None:
            return
        if obs.room_type is not None:
            here = self.map.room_index(obs.position)
            if here >= 0:
                self.room_types.setdefault(here, obs.room_type)
        for det in obs.detections:
            if det.position is None or (det.category, det.position) in self._keys:
                continue
            self._keys.add((det.category, det.position))
            room = self.map.room_index(det.position)
            self.objects.append(Remembered(det.category, det.position, det.size, room))

    def rooms_of_type(self, room_type: str) -> list[int]:
        """Known room indices of ``room_type``."""
        return [index for index, kind in self.room_types.items() if kind == room_type]

    def of_category(self, category: str, rooms: set[int] | None = None) -> list[int]:
        """Indices of remembered objects of ``category`` (in ``rooms`` when given)."""
        return [
            i
            for i, o in enumerate(self.objects)
            if o.category == category and (rooms is None or o.room in rooms)
        ]

    def truth(self, subject: int, predicate: str, target: int) -> Truth:
        """Truth of "subject PREDICATE target" on the remembered geometry (cached)."""
        key = (subject, predicate, target)
        if key not in self._truths:
            pair = [self.objects[subject], self.objects[target]]
            self._truths[key] = predicate_truth(pair[0], predicate, pair[1], self.config)
        return self._truths[key]


def _as_object(memo: Remembered) -> SceneObject:
    return SceneObject(
        id="memo",
        category=memo.category,
        label=memo.category,
        center=memo.position,
        aabb=None if memo.size is None else AABB.from_center_size(memo.position, memo.size),
    )


def predicate_truth(
    subject: Remembered, predicate: str, target: Remembered, config: RelationConfig
) -> Truth:
    """Truth of a predicate between two remembered objects, by the scene graph's rules.

    Directional predicates compare the canonical compass × elevation name; semantic ones use
    the three-valued thresholds (surface gaps need boxes on both objects, else centres).
    """
    geometry = Geometry.from_objects([_as_object(subject), _as_object(target)])
    metrics = pair_metrics(geometry, config)
    if PREDICATES.get(predicate).kind == "directional":
        name = DIRECTIONAL_PREDICATES[int(metrics.directional_codes()[0, 1])]
        return Truth.TRUE if name == predicate else Truth.FALSE
    codes = semantic_truths(metrics, geometry, config)
    return Truth.from_code(int(codes[SEMANTIC_PREDICATES.index(predicate), 0, 1]))


def match(memory: Memory, ref: Ref) -> int | None:
    """The remembered object ``ref`` describes (the first found), or ``None`` yet.

    Scope: the known rooms of type ``ref.room`` (the whole memory without a room). With a
    qualifier, a candidate must share a room with an anchor of ``ref.anchor`` in scope and the
    relation must be TRUE on the remembered geometry.
    """
    scope = None if ref.room is None else set(memory.rooms_of_type(ref.room))
    if scope is not None and not scope:
        return None
    candidates = memory.of_category(ref.category, scope)
    if ref.relation is None or not candidates:
        return candidates[0] if candidates else None
    for anchor in memory.of_category(ref.anchor or "", scope):
        room = memory.objects[anchor].room
        for i in candidates:
            same_room = memory.objects[i].room == room
            if i != anchor and same_room and memory.truth(i, ref.relation, anchor) is Truth.TRUE:
                return i
    return None


class Explorer:
    """Which exploration waypoint to visit next: unscanned rooms, then coverage points.

    Args:
        map_view: The planner.
    """

    def __init__(self, map_view: MapView) -> None:
        self.map = map_view
        self.rooms = map_view.room_waypoints()
        self.coverage = np.array(map_view.coverage_waypoints(), dtype=np.float64).reshape(-1, 3)
        self.visited = np.zeros(len(self.coverage), dtype=bool)
        self.scanned: set[int] = set()
        self.dropped: set[int] = set()

    def update(self, position: Vec3) -> None:
        """Mark coverage points near ``position`` visited."""
        if len(self.coverage):
            near = np.hypot(self.coverage[:, 0] - position[0], self.coverage[:, 2] - position[2])
            self.visited |= near < VISIT_RADIUS

    def next_target(self, position: Vec3) -> tuple[Vec3, int | None] | None:
        """The nearest unscanned room waypoint (with its room), else coverage point, else None."""
        rooms = [r for r in self.rooms if r not in self.scanned and r not in self.dropped]
        if rooms:
            points = [self.rooms[r] for r in rooms]
            best = self.map.nearest(position, points)
            if best is not None:
                return points[best], rooms[best]
            self.dropped.update(rooms)
        (open_,) = np.nonzero(~self.visited)
        if open_.size == 0:
            return None
        points = [tuple(map(float, self.coverage[i])) for i in open_]
        best = self.map.nearest(position, points)
        if best is None:
            self.visited[open_] = True
            return None
        return points[best], None  # type: ignore[return-value]


def _wrap(angle: float) -> float:
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


class SkillAgent:
    """Base of the planner-based baselines: runs :meth:`script` as a generator of actions.

    Needs the pose and map access (``ConfigError`` otherwise). Subclasses implement
    :meth:`script`; when it ends the agent stops.
    """

    instruction_source: ClassVar[InstructionSource] = "original"
    phrasing: Phrasing = "all"
    """The paraphrases :meth:`parsed` reads: all, or only the seen ones train is worded with."""

    def reset(self, episode: EpisodeView) -> None:
        """Start an episode: parse nothing yet, set up memory, exploration and the script."""
        if episode.map is None or not episode.protocol.pose:
            raise ConfigError(f"agent {type(self).__name__} needs pose and map_access")
        self.episode = episode
        self.map = episode.map
        self.memory = Memory(episode.map)
        self.explorer = Explorer(episode.map)
        self.turns_to_scan = 0 if episode.protocol.panoramic else self._scan_turns(episode)
        self.obs: Observation | None = None
        self._script: Iterator[int] | None = None

    @staticmethod
    def _scan_turns(episode: EpisodeView) -> int:
        unseen = 360.0 - min(episode.protocol.fov_deg, 360.0)
        return math.ceil(unseen / math.degrees(TURN) - 1e-9)

    def act(self, observation: Observation) -> int:
        """Update memory, then the next action of the script (STOP when it ends or budget)."""
        self.obs = observation
        self.memory.update(observation)
        if observation.position is not None:
            self.explorer.update(observation.position)
        if observation.step >= self.episode.step_budget - 1:
            return STOP
        if self._script is None:
            self._script = self.script()
        return next(self._script, STOP)

    def script(self) -> Script:
        """The behaviour of the episode (override)."""
        yield STOP

    @property
    def position(self) -> Vec3:
        """The current position (the protocol gives the pose)."""
        assert self.obs is not None and self.obs.position is not None
        return self.obs.position

    def parsed(self) -> Program | None:
        """The instruction parsed into its program, or ``None`` when it does not parse."""
        try:
            return parse(self.episode.instruction, self.phrasing)
        except InstructionParseError:
            return None

    # --- motion ------------------------------------------------------------------------------

    def go_to(
        self, goal: Vec3, until: Callable[[], bool] | None = None
    ) -> Generator[int, None, bool]:
        """Walk the planned path to ``goal``; True on arrival, False if blocked or ``until()``.

        The agent heads for the farthest path waypoint in straight reach (see :meth:`_follow`);
        when the next forward move would leave the navigable map (checked on the map before
        stepping) or collides, it takes one :meth:`detour` step and replans.
        """
        trail: set[tuple[int, int]] = set()
        for _ in range(MAX_DETOURS):
            path = self.map.shortest_path(self.position, goal)
            if path is None:
                return False
            outcome = yield from self._follow(path[1:], until)
            if outcome is not None:
                return outcome
            yield from self.detour(goal, trail)
        return False

    def _follow(
        self, path: list[Vec3], until: Callable[[], bool] | None
    ) -> Generator[int, None, bool | None]:
        """Follow waypoints; True at the end, False when ``until()``, None when blocked.

        Before each action the agent heads for the farthest remaining waypoint it can walk to
        in a straight line, so a corner it has stepped past (lattice steps rarely land within
        the arrival tolerance of a waypoint) is dropped instead of walked back to.
        """
        remaining = list(path)
        while remaining:
            if until is not None and until():
                return False
            del remaining[: self._farthest_in_line(remaining)]
            action = self._towards(remaining[0])
            if action is None:
                del remaining[0]
                continue
            if action == FORWARD and not self._forward_clear(self._heading()):
                return None
            yield action
            if action == FORWARD and self.obs is not None and self.obs.collided:
                return None
        return True

    def _farthest_in_line(self, path: list[Vec3]) -> int:
        """Index of the last waypoint of ``path`` reachable straight from here (0 when none)."""
        for i in range(len(path) - 1, 0, -1):
            if self.map.line_of_sight(self.position, path[i]):
                return i
        return 0

    def _heading(self) -> float:
        assert self.obs is not None and self.obs.heading is not None
        return self.obs.heading

    def _step_end(self, yaw: float) -> Vec3:
        x, y, z = self.position
        return (x - FORWARD_STEP * math.sin(yaw), y, z - FORWARD_STEP * math.cos(yaw))

    def _forward_clear(self, yaw: float) -> bool:
        return self.map.line_of_sight(self.position, self._step_end(yaw))

    def detour(self, goal: Vec3, trail: set[tuple[int, int]]) -> Script:
        """One greedy step on the action lattice towards ``goal``.

        Of the 24 headings whose forward move stays on the map, the one whose step ends
        geodesically nearest ``goal`` wins (a small cost per turn; ends already in ``trail`` —
        10 cm cells of earlier detours of this leg — cost 1 m more); the agent turns to it and
        steps.
        """
        yaw = self._heading()
        turns = range(-_HALF_CIRCLE + 1, _HALF_CIRCLE + 1)
        ends = [self._step_end(yaw + k * TURN) for k in turns]
        best: tuple[float, int] | None = None
        for k, end, dist in zip(turns, ends, self.map.distances_from(goal, ends), strict=True):
            if dist is None or not self.map.line_of_sight(self.position, end):
                continue
            cell = (round(end[0] / 0.1), round(end[2] / 0.1))
            score = dist + TURN_COST * abs(k) + (1.0 if cell in trail else 0.0)
            if best is None or score < best[0]:
                best = (score, k)
        if best is None:
            return
        k = best[1]
        end = self._step_end(yaw + k * TURN)
        trail.add((round(end[0] / 0.1), round(end[2] / 0.1)))
        for _ in range(abs(k)):
            yield TURN_LEFT if k > 0 else TURN_RIGHT
        yield FORWARD

    def _towards(self, target: Vec3) -> int | None:
        """The action that brings the agent towards ``target``; None once it is reached."""
        x, _, z = self.position
        gap = math.hypot(target[0] - x, target[2] - z)
        if gap <= 0.5 * FORWARD_STEP:
            return None
        assert self.obs is not None and self.obs.heading is not None
        yaw = self.obs.heading
        error = _wrap(heading_to(self.position, target) - yaw)
        if abs(error) > HEADING_TOLERANCE:
            return TURN_LEFT if error > 0 else TURN_RIGHT
        nx, nz = x - FORWARD_STEP * math.sin(yaw), z - FORWARD_STEP * math.cos(yaw)
        if math.hypot(target[0] - nx, target[2] - nz) >= gap:
            return None
        return FORWARD

    def look_around(self) -> Script:
        """Turn left until every direction has been in view."""
        for _ in range(self.turns_to_scan):
            yield TURN_LEFT

    # --- search ------------------------------------------------------------------------------

    def scan_here(self) -> Script:
        """Look around unless the current room was already scanned; mark it scanned."""
        room = self.map.room_index(self.position)
        if room in self.explorer.scanned:
            return
        self.explorer.scanned.add(room)
        yield from self.look_around()

    def explore(self, until: Callable[[], bool]) -> Generator[int, None, bool]:
        """One exploration move (scan here, or go to the next waypoint and scan there).

        Returns:
            False when there is nothing left to explore, else True.
        """
        if self.map.room_index(self.position) not in self.explorer.scanned:
            yield from self.scan_here()
            return True
        target = self.explorer.next_target(self.position)
        if target is None:
            return False
        point, room = target
        arrived = yield from self.go_to(point, until)
        if room is None and not until():
            self.explorer.update(point)  # reached or blocked: do not pick it again
        if room is not None and not arrived and not until():
            self.explorer.dropped.add(room)
        if arrived and room is not None:
            self.explorer.scanned.add(room)
            yield from self.look_around()
        return True

    def find(self, ref: Ref) -> Generator[int, None, int | None]:
        """Explore until ``ref`` matches a remembered object; its index, or None."""
        while (found := match(self.memory, ref)) is None:
            more = yield from self.explore(lambda: match(self.memory, ref) is not None)
            if not more:
                return None
        return found

    def visit(self, ref: Ref) -> Generator[int, None, bool]:
        """Find the object ``ref`` describes and walk to its approach point."""
        found = yield from self.find(ref)
        if found is None:
            return False
        memo = self.memory.objects[found]
        point = self.map.approach(memo.position, memo.size)
        if point is None:
            return False
        arrived = yield from self.go_to(point)
        return arrived

    def visit_all(self, refs: list[Ref]) -> Script:
        """Visit each description in order (skipping those never found)."""
        for ref in refs:
            yield from self.visit(ref)
