"""The scene graph: room and object nodes, containment edges and per-room relation arrays.

Relations exist only between objects of the same room. Each room stores its pair metrics and the
truth codes of the semantic predicates as numpy arrays indexed ``[subject, target]`` (see
:mod:`condvln.graph.relations` for the "subject PREDICATE target" convention); :class:`Edge`
records are materialised on demand.

The graph's *edges* are: one containment edge ``object in room`` per object, one canonical
directional edge per ordered pair, and the semantic edges whose truth is TRUE or UNDECIDED (the
latter marked, never to be used as a label). FALSE semantic facts are stored too and answered by
:meth:`SceneGraph.truth`; :meth:`SceneGraph.edges` lists them when asked for ``truth=Truth.FALSE``.

>>> from condvln.scene.model import Room, Scene, SceneObject
>>> room = Room(id="k", room_type="kitchen", label="Kitchen", objects=(
...     SceneObject(id="stool", category="stool", label="Stool", center=(0.0, 0.3, -3.0),
...                 size=(0.4, 0.6, 0.4)),
...     SceneObject(id="dishwasher", category="dishwasher", label="Dishwasher",
...                 center=(0.0, 0.35, 0.0), size=(0.6, 0.7, 0.6))))
>>> graph = build_scene_graph(Scene(id="demo", source="manual", rooms=(room,)))
>>> graph.directional("stool", "dishwasher")
'north of'
>>> graph.truth("stool", "near", "dishwasher"), graph.truth("stool", "far from", "dishwasher")
(<Truth.FALSE: 'false'>, <Truth.UNDECIDED: 'undecided'>)
>>> [(e.predicate, e.truth.value) for e in graph.relations_of("stool")]
[('in', 'true'), ('north of', 'true'), ('far from', 'undecided')]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from condvln.errors import CondVLNError
from condvln.graph.config import RelationConfig
from condvln.graph.relations import (
    CONTAINMENT_PREDICATE,
    DIRECTIONAL_PREDICATES,
    ELEVATION_BINS,
    PREDICATES,
    SEMANTIC_PREDICATES,
    UNDECIDED_CODE,
    Geometry,
    PairMetrics,
    Truth,
    pair_metrics,
    semantic_truths,
)
from condvln.scene.model import Scene, SceneObject

_DIRECTIONAL_CODE = {name: code for code, name in enumerate(DIRECTIONAL_PREDICATES)}


class GraphQueryError(CondVLNError):
    """A query the graph cannot answer: unknown id, an object with itself, wrong node kind."""


class CrossRoomError(GraphQueryError):
    """A relation asked between objects of different rooms (relations are per room)."""


@dataclass(frozen=True, slots=True)
class EdgeMetrics:
    """The metrics of one ordered pair that its relation edges were computed from.

    Attributes mirror :class:`~condvln.graph.relations.PairMetrics`, as plain Python values;
    bins and the distance type are names, undefined distances are ``None``.
    """

    delta: tuple[float, float, float]
    center_distance: float
    horizontal_distance: float
    aabb_distance: float | None
    sphere_distance: float | None
    used_distance: float
    distance_type: str
    azimuth_deg: float
    azimuth_bin: str
    elevation_deg: float
    elevation_bin: str
    footprint_overlap: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible mapping (the ``metrics`` of a pair record)."""
        out = {name: getattr(self, name) for name in PairMetrics.field_names()}
        out["delta"] = list(self.delta)
        return out


@dataclass(frozen=True, slots=True)
class Edge:
    """One edge: "*subject* PREDICATE *target*".

    Attributes:
        subject: Object id.
        predicate: Predicate name (``"in"``, ``"east-and-up of"``, ``"near"``, …).
        target: Object id, or the room id for containment.
        kind: ``"containment"``, ``"directional"`` or ``"semantic"``.
        truth: TRUE, or UNDECIDED / FALSE for semantic facts.
        metrics: The pair's metrics (``None`` for containment).
    """

    subject: str
    predicate: str
    target: str
    kind: str
    truth: Truth
    metrics: EdgeMetrics | None = None

    def describe(self) -> str:
        """One line for printing, e.g. ``lamp above table [true] (aabb 0.500 m, east/up)``."""
        text = f"{self.subject} {self.predicate} {self.target} [{self.truth.value}]"
        m = self.metrics
        if m is None:
            return text
        return (
            f"{text} ({m.distance_type} {m.used_distance:.3f} m, {m.azimuth_bin}/{m.elevation_bin})"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible mapping of the edge."""
        return {
            "subject": self.subject,
            "predicate": self.predicate,
            "target": self.target,
            "kind": self.kind,
            "truth": self.truth.value,
            "metrics": None if self.metrics is None else self.metrics.to_dict(),
        }


@dataclass(frozen=True, eq=False)
class RoomRelations:
    """Relation arrays of one room.

    Attributes:
        room_id: The room.
        object_ids: The room's objects, in scene order (the array index order).
        metrics: Pair metrics, ``[subject, target]``.
        truths: ``(len(SEMANTIC_PREDICATES), n, n)`` int8 truth codes.
    """

    room_id: str
    object_ids: tuple[str, ...]
    metrics: PairMetrics
    truths: np.ndarray

    def edge_metrics(self, subject: int, target: int) -> EdgeMetrics:
        """The metrics of pair ``(subject, target)`` (array indices) as an :class:`EdgeMetrics`."""
        values: dict[str, Any] = {}
        for name in PairMetrics.field_names():
            value = getattr(self.metrics, name)[subject, target]
            vocabulary = PairMetrics.VOCABULARIES.get(name)
            if vocabulary is not None:
                values[name] = vocabulary[int(value)]
            elif name == "delta":
                values[name] = tuple(float(v) for v in value)
            else:
                values[name] = None if np.isnan(value) else float(value)
        return EdgeMetrics(**values)

    def directional_code(self, subject: int, target: int) -> int:
        """Index into :data:`DIRECTIONAL_PREDICATES` of pair ``(subject, target)``."""
        azimuth = int(self.metrics.azimuth_bin[subject, target])
        return azimuth * len(ELEVATION_BINS) + int(self.metrics.elevation_bin[subject, target])

    def equals(self, other: RoomRelations) -> bool:
        """Exact equality of ids and arrays."""
        return (
            self.room_id == other.room_id
            and self.object_ids == other.object_ids
            and self.metrics.equals(other.metrics)
            and np.array_equal(self.truths, other.truths)
        )


def _blank_diagonal(metrics: PairMetrics, truths: np.ndarray) -> None:
    """Zero the self-pair entries (unused) so built and loaded arrays compare equal."""
    n = truths.shape[-1]
    idx = np.arange(n)
    for name in PairMetrics.field_names():
        getattr(metrics, name)[idx, idx] = 0
    truths[:, idx, idx] = 0


def room_relations(
    room_id: str, objects: Sequence[SceneObject], config: RelationConfig
) -> RoomRelations:
    """Compute the relation arrays of one room's objects.

    Args:
        room_id: The room.
        objects: Its objects, in order.
        config: Thresholds.

    Returns:
        The room's metrics and semantic truth codes.
    """
    geometry = Geometry.from_objects(objects)
    metrics = pair_metrics(geometry, config)
    truths = semantic_truths(metrics, geometry, config)
    _blank_diagonal(metrics, truths)
    return RoomRelations(room_id, tuple(o.id for o in objects), metrics, truths)


class SceneGraph:
    """Rooms, objects, containment and per-room relations of one scene, with queries."""

    def __init__(
        self, scene: Scene, config: RelationConfig, rooms: Sequence[RoomRelations]
    ) -> None:
        """Assemble a graph; use :func:`build_scene_graph` or :func:`load_graph` instead."""
        self.scene = scene
        self.config = config
        self._rooms = {r.room_id: r for r in rooms}
        self._objects = {o.id: o for o in scene.objects()}
        self._where: dict[str, tuple[str, int]] = {
            oid: (r.room_id, i) for r in rooms for i, oid in enumerate(r.object_ids)
        }
        self._by_category: dict[tuple[str, str | None], tuple[SceneObject, ...]] = {}
        for r in rooms:
            members = tuple(self._objects[i] for i in r.object_ids)
            self._by_category[(r.room_id, None)] = members
            for obj in members:
                key = (r.room_id, obj.category)
                self._by_category[key] = (*self._by_category.get(key, ()), obj)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SceneGraph):
            return NotImplemented
        return (
            self.scene == other.scene
            and self.config == other.config
            and list(self._rooms) == list(other._rooms)
            and all(r.equals(other._rooms[k]) for k, r in self._rooms.items())
        )

    __hash__ = None  # type: ignore[assignment]

    @property
    def config_hash(self) -> str:
        """Hash of the thresholds the graph was built with."""
        return self.config.config_hash

    @property
    def object_ids(self) -> tuple[str, ...]:
        """Object ids in scene order."""
        return tuple(self._objects)

    @property
    def room_ids(self) -> tuple[str, ...]:
        """Room ids in scene order."""
        return tuple(self._rooms)

    def relations(self, room_id: str) -> RoomRelations:
        """The relation arrays of one room."""
        self._check_room(room_id)
        return self._rooms[room_id]

    def object(self, object_id: str) -> SceneObject:
        """The object node ``object_id``."""
        self._locate(object_id)
        return self._objects[object_id]

    def room_of(self, object_id: str) -> str:
        """Id of the room that contains ``object_id``."""
        return self._locate(object_id)[0]

    def objects_in(self, room_id: str, category: str | None = None) -> tuple[SceneObject, ...]:
        """Objects of a room (in scene order), optionally only those of ``category``."""
        self._check_room(room_id)
        return self._by_category.get((room_id, category), ())

    def categories(self, room_id: str | None = None) -> tuple[str, ...]:
        """Sorted distinct categories of a room, or of the whole scene when ``room_id`` is None."""
        rooms = self.room_ids if room_id is None else (room_id,)
        return tuple(sorted({o.category for r in rooms for o in self.objects_in(r)}))

    def rooms_with(self, category: str) -> tuple[str, ...]:
        """Ids of the rooms holding at least one object of ``category``, in scene order."""
        return tuple(r for r in self.room_ids if self.objects_in(r, category))

    def metrics(self, subject_id: str, target_id: str) -> EdgeMetrics:
        """Metrics of the ordered pair (same room)."""
        room, i, j = self._pair(subject_id, target_id)
        return room.edge_metrics(i, j)

    def directional(self, subject_id: str, target_id: str) -> str:
        """The canonical directional predicate of the ordered pair (same room)."""
        room, i, j = self._pair(subject_id, target_id)
        return DIRECTIONAL_PREDICATES[room.directional_code(i, j)]

    def truth(self, subject_id: str, predicate: str, target_id: str) -> Truth:
        """Truth of "*subject* PREDICATE *target*".

        Args:
            subject_id: An object id.
            predicate: Any registered predicate; for ``"in"`` the target is a room id.
            target_id: An object id of the same room (a room id for ``"in"``).

        Returns:
            TRUE / FALSE / UNDECIDED (directional and containment facts are never UNDECIDED).

        Raises:
            ConfigError: Unknown predicate (with a suggestion).
            CrossRoomError: Subject and target are in different rooms.
            GraphQueryError: Unknown ids, or subject and target are the same object.
        """
        spec = PREDICATES.get(predicate)
        if spec.kind == "containment":
            self._check_room(target_id)
            return Truth.TRUE if self.room_of(subject_id) == target_id else Truth.FALSE
        room, i, j = self._pair(subject_id, target_id)
        if spec.kind == "directional":
            name = DIRECTIONAL_PREDICATES[room.directional_code(i, j)]
            return Truth.TRUE if name == predicate else Truth.FALSE
        return Truth.from_code(room.truths[SEMANTIC_PREDICATES.index(predicate), i, j])

    def relations_of(
        self, object_id: str, predicate: str | None = None, *, truth: Truth | None = None
    ) -> list[Edge]:
        """Edges with ``object_id`` as subject.

        Args:
            object_id: The subject.
            predicate: Only this predicate (checked against the registry).
            truth: As in :meth:`edges`.

        Returns:
            The containment edge first, then by target (scene order), directional first.
        """
        room_id, i = self._locate(object_id)
        return list(self._room_edges(self._rooms[room_id], predicate, truth, subject=i))

    def edges(
        self,
        predicate: str | None = None,
        *,
        room_id: str | None = None,
        truth: Truth | None = None,
    ) -> Iterator[Edge]:
        """Materialise edges, room by room, in a deterministic order.

        Args:
            predicate: Only this predicate (checked against the registry).
            room_id: Only this room.
            truth: ``None`` for the graph's edges (TRUE and UNDECIDED); a value for only the
                facts with that truth (``Truth.FALSE`` lists the FALSE semantic facts).

        Yields:
            :class:`Edge` records with their pair metrics.
        """
        rooms = self.room_ids if room_id is None else (room_id,)
        for rid in rooms:
            yield from self._room_edges(self.relations(rid), predicate, truth)

    def _room_edges(
        self,
        room: RoomRelations,
        predicate: str | None,
        truth: Truth | None,
        subject: int | None = None,
    ) -> Iterator[Edge]:
        if predicate is not None:
            PREDICATES.get(predicate)
        wanted = (Truth.TRUE, Truth.UNDECIDED) if truth is None else (truth,)
        subjects = range(len(room.object_ids)) if subject is None else (subject,)
        if predicate in (None, CONTAINMENT_PREDICATE) and Truth.TRUE in wanted:
            for s in subjects:
                yield Edge(
                    room.object_ids[s],
                    CONTAINMENT_PREDICATE,
                    room.room_id,
                    "containment",
                    Truth.TRUE,
                )
        last_pair, metrics = (-1, -1), None
        for s, t, column, code in _edge_table(room, predicate, wanted, subject).tolist():
            if (s, t) != last_pair:  # rows are sorted by pair: one metrics record per pair
                last_pair, metrics = (s, t), room.edge_metrics(s, t)
            if column == _DIRECTIONAL_COLUMN:
                name, kind, value = DIRECTIONAL_PREDICATES[code], "directional", Truth.TRUE
            else:
                name, kind, value = SEMANTIC_PREDICATES[column], "semantic", Truth.from_code(code)
            yield Edge(room.object_ids[s], name, room.object_ids[t], kind, value, metrics)

    def _locate(self, object_id: str) -> tuple[str, int]:
        try:
            return self._where[object_id]
        except KeyError:
            raise GraphQueryError(
                f"unknown object {object_id!r} in scene {self.scene.id!r}"
            ) from None

    def _check_room(self, room_id: str) -> None:
        if room_id not in self._rooms:
            raise GraphQueryError(f"unknown room {room_id!r} in scene {self.scene.id!r}")

    def _pair(self, subject_id: str, target_id: str) -> tuple[RoomRelations, int, int]:
        (room_s, i), (room_t, j) = self._locate(subject_id), self._locate(target_id)
        if room_s != room_t:
            raise CrossRoomError(
                f"objects {subject_id!r} (room {room_s!r}) and {target_id!r} (room {room_t!r}) "
                "are in different rooms; relations exist only within a room"
            )
        if i == j:
            raise GraphQueryError(f"no relation between object {subject_id!r} and itself")
        return self._rooms[room_s], i, j


_DIRECTIONAL_COLUMN = -1


def _edge_table(
    room: RoomRelations, predicate: str | None, wanted: Sequence[Truth], subject: int | None
) -> np.ndarray:
    """Rows ``(subject, target, column, code)`` of the selected relation edges, sorted by pair.

    ``column`` indexes :data:`SEMANTIC_PREDICATES` and ``code`` is the truth code, except for
    directional edges: column ``-1`` and ``code`` the directional predicate code (always TRUE).
    """
    n = len(room.object_ids)
    pair = ~np.eye(n, dtype=bool)
    if subject is not None:
        pair &= (np.arange(n) == subject)[:, None]
    parts = []
    if Truth.TRUE in wanted:
        directional = room.metrics.directional_codes()
        mask = (
            pair
            if predicate is None
            else pair & (directional == _DIRECTIONAL_CODE.get(predicate, -1))
        )
        s, t = np.nonzero(mask)
        column = np.full_like(s, _DIRECTIONAL_COLUMN)
        parts.append(np.stack([s, t, column, directional[s, t].astype(s.dtype)], 1))
    codes = [w.code for w in wanted]
    for column, name in enumerate(SEMANTIC_PREDICATES):
        if predicate not in (None, name):
            continue
        values = room.truths[column]
        s, t = np.nonzero(pair & np.isin(values, codes))
        parts.append(np.stack([s, t, np.full_like(s, column), values[s, t].astype(s.dtype)], 1))
    if not parts:
        return np.zeros((0, 4), dtype=np.int64)
    table = np.concatenate(parts)
    return table[np.lexsort((table[:, 2], table[:, 1], table[:, 0]))]


def build_scene_graph(scene: Scene, config: RelationConfig | None = None) -> SceneGraph:
    """Build the scene graph of ``scene``.

    Args:
        scene: The scene.
        config: Thresholds; the defaults when ``None``.

    Returns:
        The graph (deterministic: same scene and config give the same graph and bytes).
    """
    config = RelationConfig() if config is None else config
    rooms = [room_relations(r.id, r.objects, config) for r in scene.rooms]
    return SceneGraph(scene, config, rooms)


def summarize(graph: SceneGraph) -> dict[str, Any]:
    """Counts for the command line: nodes, TRUE edges and UNDECIDED facts per predicate.

    Returns:
        ``{"scene_id", "source", "config_hash", "rooms", "objects", "nodes", "ordered_pairs",
        "edges", "undecided", "edges_per_predicate", "undecided_per_predicate"}``; the
        per-predicate maps list every semantic predicate and the directional predicates that
        occur, with ``"in"`` counting containment edges.
    """
    per_predicate: dict[str, int] = {CONTAINMENT_PREDICATE: len(graph.object_ids)}
    undecided = dict.fromkeys(SEMANTIC_PREDICATES, 0)
    per_predicate.update(dict.fromkeys(SEMANTIC_PREDICATES, 0))
    pairs = 0
    for rid in graph.room_ids:
        room = graph.relations(rid)
        n = len(room.object_ids)
        pairs += n * (n - 1)
        off = ~np.eye(n, dtype=bool)
        counts = np.bincount(
            room.metrics.directional_codes()[off], minlength=len(DIRECTIONAL_PREDICATES)
        )
        for code in np.nonzero(counts)[0]:
            name = DIRECTIONAL_PREDICATES[code]
            per_predicate[name] = per_predicate.get(name, 0) + int(counts[code])
        for column, name in enumerate(SEMANTIC_PREDICATES):
            per_predicate[name] += int(np.count_nonzero(room.truths[column] == Truth.TRUE.code))
            undecided[name] += int(np.count_nonzero(room.truths[column] == UNDECIDED_CODE))
    return {
        "scene_id": graph.scene.id,
        "source": graph.scene.source,
        "config_hash": graph.config_hash,
        "rooms": len(graph.room_ids),
        "objects": len(graph.object_ids),
        "nodes": len(graph.room_ids) + len(graph.object_ids),
        "ordered_pairs": pairs,
        "edges": sum(per_predicate.values()),
        "undecided": sum(undecided.values()),
        "edges_per_predicate": dict(sorted(per_predicate.items())),
        "undecided_per_predicate": undecided,
    }
