"""Scene graphs: pairwise spatial metrics, three-valued predicates, queries and JSON (§3.1.3).

>>> from condvln.scene.model import Room, Scene, SceneObject
>>> lamp = SceneObject(id="lamp", category="lamp", label="Lamp", center=(0.0, 1.2, 0.0),
...                    size=(0.3, 0.4, 0.3))
>>> table = SceneObject(id="table", category="table", label="Table", center=(0.1, 0.4, 0.0),
...                     size=(1.2, 0.8, 0.8))
>>> scene = Scene(id="demo", source="manual",
...               rooms=(Room(id="r", room_type="bedroom", label="Bedroom",
...                           objects=(lamp, table)),))
>>> graph = build_scene_graph(scene)
>>> graph.truth("lamp", "above", "table"), graph.truth("table", "below", "lamp")
(<Truth.TRUE: 'true'>, <Truth.TRUE: 'true'>)
>>> summarize(graph)["edges_per_predicate"]["above"]
1
>>> graph_from_dict(graph_to_dict(graph)) == graph
True
"""

from condvln.graph.config import CONFIG_VERSION, RelationConfig, parse_config
from condvln.graph.relations import (
    AZIMUTH_BINS,
    COMPASS,
    CONTAINMENT_PREDICATE,
    DIRECTIONAL_PREDICATES,
    DISTANCE_TYPES,
    ELEVATION_BINS,
    PREDICATES,
    SEMANTIC_PREDICATES,
    PredicateSpec,
    Truth,
)
from condvln.graph.scene_graph import (
    CrossRoomError,
    Edge,
    EdgeMetrics,
    GraphQueryError,
    RoomRelations,
    SceneGraph,
    build_scene_graph,
    summarize,
)
from condvln.graph.serialize import graph_from_dict, graph_to_dict, load_graph, save_graph

__all__ = [
    "AZIMUTH_BINS",
    "COMPASS",
    "CONFIG_VERSION",
    "CONTAINMENT_PREDICATE",
    "DIRECTIONAL_PREDICATES",
    "DISTANCE_TYPES",
    "ELEVATION_BINS",
    "PREDICATES",
    "SEMANTIC_PREDICATES",
    "CrossRoomError",
    "Edge",
    "EdgeMetrics",
    "GraphQueryError",
    "PredicateSpec",
    "RelationConfig",
    "RoomRelations",
    "SceneGraph",
    "Truth",
    "build_scene_graph",
    "graph_from_dict",
    "graph_to_dict",
    "load_graph",
    "parse_config",
    "save_graph",
    "summarize",
]
