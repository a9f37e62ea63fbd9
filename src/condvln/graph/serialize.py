"""Scene-graph JSON: versioned, stamped with the config hash, exact round trip.

The document::

    {"format": "condvln.scene_graph", "schema_version": 1,
     "config": {...thresholds...}, "config_hash": "<16 hex>",
     "scene": {...a condvln.scene document...},
     "rooms": [{"room_id": "...", "object_ids": [...],
                "pairs": [{"subject": "...", "target": "...",
                           "metrics": {"delta": [dx, dy, dz], "center_distance": ..., ...},
                           "directional": "north-east-and-up of",
                           "truth": {"near": "false", "far from": "true", ...}}, ...]}]}

``object_ids`` are the room's containment edges (``object in room``); ``pairs`` holds every
ordered pair of distinct objects of the room, row-major in ``object_ids`` order (subject first),
with the metrics its edges were computed from, its canonical directional predicate and the truth
of every semantic predicate (FALSE included). Undefined metrics are ``null``; no NaN or infinity
is ever written. Floats are written in shortest round-trip form and keys are sorted, so
``graph_from_dict(graph_to_dict(g)) == g`` and one graph always gives the same bytes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, NoReturn

import numpy as np

from condvln.errors import ConfigError, FormatError
from condvln.graph.config import parse_config
from condvln.graph.relations import (
    DIRECTIONAL_PREDICATES,
    SEMANTIC_PREDICATES,
    PairMetrics,
    Truth,
)
from condvln.graph.scene_graph import RoomRelations, SceneGraph
from condvln.io import atomic_write_bytes, dumps_json, read_json
from condvln.scene.model import Room
from condvln.scene.serialize import scene_from_dict, scene_to_dict

FORMAT_NAME = "condvln.scene_graph"
SCHEMA_VERSION = 1

_TRUTH_CODE = {t.value: t.code for t in Truth}
_TRUTH_NAME = tuple(Truth.from_code(c).value for c in range(len(Truth)))
_FIELDS = PairMetrics.field_names()


def _off_diagonal(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row-major indices of the ordered pairs of distinct objects."""
    return np.nonzero(~np.eye(n, dtype=bool))


def _column(name: str, values: np.ndarray) -> list[Any]:
    """JSON values of one metric over the selected pairs (names for bins, None for NaN)."""
    vocabulary = PairMetrics.VOCABULARIES.get(name)
    if vocabulary is not None:
        return [vocabulary[v] for v in values.tolist()]
    if name in PairMetrics.NULLABLE:
        return [None if v != v else v for v in values.tolist()]  # v != v: NaN
    return values.tolist()


def _room_to_dict(room: RoomRelations) -> dict[str, Any]:
    s, t = _off_diagonal(len(room.object_ids))
    ids = room.object_ids
    columns = [_column(name, getattr(room.metrics, name)[s, t]) for name in _FIELDS]
    directional = [
        DIRECTIONAL_PREDICATES[c] for c in room.metrics.directional_codes()[s, t].tolist()
    ]
    truths = [
        [_TRUTH_NAME[c] for c in room.truths[k][s, t].tolist()]
        for k in range(len(SEMANTIC_PREDICATES))
    ]
    pairs = [
        {
            "subject": ids[i],
            "target": ids[j],
            "metrics": dict(zip(_FIELDS, values, strict=True)),
            "directional": direction,
            "truth": dict(zip(SEMANTIC_PREDICATES, truth, strict=True)),
        }
        for i, j, values, direction, truth in zip(
            s.tolist(),
            t.tolist(),
            zip(*columns, strict=True),
            directional,
            zip(*truths, strict=True),
            strict=True,
        )
    ]
    return {"room_id": room.room_id, "object_ids": list(ids), "pairs": pairs}


def graph_to_dict(graph: SceneGraph) -> dict[str, Any]:
    """The JSON document of ``graph`` (see the module docstring for the layout)."""
    return {
        "format": FORMAT_NAME,
        "schema_version": SCHEMA_VERSION,
        "config": graph.config.model_dump(mode="json"),
        "config_hash": graph.config_hash,
        "scene": scene_to_dict(graph.scene),
        "rooms": [_room_to_dict(graph.relations(r)) for r in graph.room_ids],
    }


def _require(doc: Any, key: str, where: str, kind: type) -> Any:
    if not isinstance(doc, Mapping):
        raise FormatError(f"must be an object, got {type(doc).__name__}", record=where)
    if key not in doc:
        raise FormatError("missing", record=where, field=key)
    value = doc[key]
    if not isinstance(value, kind):
        raise FormatError(
            f"must be of type {kind.__name__}, got {type(value).__name__}", record=where, field=key
        )
    return value


def graph_from_dict(doc: Mapping[str, Any]) -> SceneGraph:
    """Rebuild a :class:`SceneGraph` from a document written by :func:`graph_to_dict`.

    Raises:
        FormatError: One line naming the record and field of the first problem.
    """
    if not isinstance(doc, Mapping) or doc.get("format") != FORMAT_NAME:
        raise FormatError(f"not a {FORMAT_NAME} document", record="document", field="format")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise FormatError(
            f"unsupported schema version {doc.get('schema_version')!r} "
            f"(this CondVLN reads {SCHEMA_VERSION})",
            record="document",
            field="schema_version",
        )
    try:
        config = parse_config(_require(doc, "config", "document", Mapping))
    except ConfigError as exc:
        raise FormatError(str(exc), record="document", field="config") from None
    if _require(doc, "config_hash", "document", str) != config.config_hash:
        raise FormatError(
            f"does not match the config (expected {config.config_hash})",
            record="document",
            field="config_hash",
        )
    scene = scene_from_dict(_require(doc, "scene", "document", Mapping))
    raw_rooms = _require(doc, "rooms", "document", list)
    if len(raw_rooms) != len(scene.rooms):
        raise FormatError(
            f"has {len(raw_rooms)} entries but the scene has {len(scene.rooms)} rooms",
            record="document",
            field="rooms",
        )
    rooms = [
        _room_from_dict(raw, room, f"rooms[{k}]")
        for k, (raw, room) in enumerate(zip(raw_rooms, scene.rooms, strict=True))
    ]
    return SceneGraph(scene, config, rooms)


def _room_from_dict(raw: Any, room: Room, where: str) -> RoomRelations:
    ids = tuple(o.id for o in room.objects)
    if _require(raw, "room_id", where, str) != room.id:
        raise FormatError(f"must be {room.id!r} (scene order)", record=where, field="room_id")
    if tuple(_require(raw, "object_ids", where, list)) != ids:
        raise FormatError(
            f"must list the objects of room {room.id!r} in scene order",
            record=where,
            field="object_ids",
        )
    records = _require(raw, "pairs", where, list)
    n = len(ids)
    if len(records) != n * (n - 1):
        raise FormatError(
            f"must hold {n * (n - 1)} ordered pairs, got {len(records)}",
            record=where,
            field="pairs",
        )
    s, t = _off_diagonal(n)
    columns, directional, truths = _pair_columns(records, ids, s.tolist(), t.tolist(), where)
    values = {name: _metric_array(name, columns[name], s, t, n, where) for name in _FIELDS}
    metrics = PairMetrics(**values)
    codes = np.zeros((len(SEMANTIC_PREDICATES), n, n), dtype=np.int8)
    for k, name in enumerate(SEMANTIC_PREDICATES):
        codes[k][s, t] = _codes(truths[k], _TRUTH_CODE, where, f"truth.{name}")
    stored = _codes(
        directional, {p: c for c, p in enumerate(DIRECTIONAL_PREDICATES)}, where, "directional"
    )
    mismatch = np.nonzero(stored != metrics.directional_codes()[s, t])[0]
    if mismatch.size:
        raise FormatError(
            "does not match azimuth_bin and elevation_bin",
            record=f"{where}.pairs[{mismatch[0]}]",
            field="directional",
        )
    return RoomRelations(room.id, ids, metrics, codes)


def _pair_columns(
    records: list[Any], ids: tuple[str, ...], s: list[int], t: list[int], where: str
) -> tuple[dict[str, list[Any]], list[Any], list[list[Any]]]:
    """Split pair records into per-field columns, checking identities and keys."""
    columns: dict[str, list[Any]] = {name: [] for name in _FIELDS}
    directional: list[Any] = []
    truths: list[list[Any]] = [[] for _ in SEMANTIC_PREDICATES]
    for k, record in enumerate(records):
        try:
            metrics, truth = record["metrics"], record["truth"]
            ok = record["subject"] == ids[s[k]] and record["target"] == ids[t[k]]
            for name in _FIELDS:
                columns[name].append(metrics[name])
            for column, name in zip(truths, SEMANTIC_PREDICATES, strict=True):
                column.append(truth[name])
            directional.append(record["directional"])
        except (KeyError, TypeError):
            _diagnose(record, f"{where}.pairs[{k}]")
        if not ok:
            raise FormatError(
                f"must be the pair ({ids[s[k]]!r}, {ids[t[k]]!r})",
                record=f"{where}.pairs[{k}]",
                field="subject",
            )
    return columns, directional, truths


def _diagnose(record: Any, where: str) -> NoReturn:
    """Raise a :class:`FormatError` naming the missing or mistyped field of a pair record."""
    metrics = _require(record, "metrics", where, Mapping)
    truth = _require(record, "truth", where, Mapping)
    for key in ("subject", "target", "directional"):
        _require(record, key, where, str)
    for name in _FIELDS:
        _require(metrics, name, f"{where}.metrics", object)
    for name in SEMANTIC_PREDICATES:
        _require(truth, name, f"{where}.truth", object)
    raise FormatError("malformed pair record", record=where)


def _metric_array(
    name: str, values: list[Any], s: np.ndarray, t: np.ndarray, n: int, where: str
) -> np.ndarray:
    """Validate one metric column and scatter it into an ``(n, n)`` array (zero diagonal)."""
    vocabulary = PairMetrics.VOCABULARIES.get(name)
    if vocabulary is not None:
        out = np.zeros((n, n), dtype=np.int8)
        out[s, t] = _codes(values, {v: c for c, v in enumerate(vocabulary)}, where, name)
        return out
    nullable = name in PairMetrics.NULLABLE
    flat = values
    if name == "delta":
        bad = [k for k, v in enumerate(values) if not (isinstance(v, list) and len(v) == 3)]
        if bad:
            raise FormatError(
                "must be a list of 3 numbers",
                record=f"{where}.pairs[{bad[0]}]",
                field="metrics.delta",
            )
        flat = [x for v in values for x in v]
    bad = [
        k for k, v in enumerate(flat) if not (type(v) in (float, int) or (nullable and v is None))
    ]
    if bad:
        pair = bad[0] // 3 if name == "delta" else bad[0]
        raise FormatError(
            "must be a finite number" + (" or null" if nullable else ""),
            record=f"{where}.pairs[{pair}]",
            field=f"metrics.{name}",
        )
    array = np.array([np.nan if v is None else v for v in flat], dtype=np.float64)
    out = np.zeros((n, n, 3) if name == "delta" else (n, n), dtype=np.float64)
    out[s, t] = array.reshape(-1, 3) if name == "delta" else array
    return out


def _codes(values: list[Any], table: Mapping[str, int], where: str, field: str) -> np.ndarray:
    """Map names to integer codes, naming the first unknown one."""
    try:
        return np.array([table[v] for v in values], dtype=np.int16)
    except (KeyError, TypeError):
        k = next(k for k, v in enumerate(values) if not isinstance(v, str) or v not in table)
        raise FormatError(
            f"unknown value {values[k]!r}", record=f"{where}.pairs[{k}]", field=field
        ) from None


def save_graph(graph: SceneGraph, path: str | os.PathLike[str], *, indent: bool = False) -> None:
    """Write ``graph`` as deterministic JSON, atomically (temporary file, then rename)."""
    atomic_write_bytes(path, dumps_json(graph_to_dict(graph), indent=indent))


def load_graph(path: str | os.PathLike[str]) -> SceneGraph:
    """Read a graph written by :func:`save_graph`.

    Raises:
        FormatError: One line naming the file, the record and the field of the problem.
    """
    doc = read_json(path)
    try:
        return graph_from_dict(doc)
    except FormatError as exc:
        raise exc.with_file(str(path)) from None
