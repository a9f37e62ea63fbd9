"""Top-down map rendering."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image
import numpy as np

from condvln.nav import GridNavigator
from condvln.nav.render import render_map, room_colour
from condvln.scene.model import Door, Room, Scene, SceneObject
from condvln.scene.sources import load


def _scene() -> Scene:
    sofa = SceneObject(
        id="sofa", category="sofa", label="Sofa", center=(2.0, 0.4, 2.0), size=(2.0, 0.8, 0.9)
    )
    rooms = (
        Room(
            id="a",
            room_type="living room",
            label="LivingRoom",
            objects=(sofa,),
            floor_polygon=((0, 0), (5, 0), (5, 4), (0, 4)),
        ),
        Room(id="b", room_type="pantry", label="Pantry", floor_polygon=((5, 0), (8, 0), (8, 4))),
    )
    door = Door(id="d", room_ids=("a", "b"), segment=((5.0, 0.5), (5.0, 1.5)))
    return Scene(id="test/map", source="test", rooms=rooms, doors=(door,))


def _is_png(path: Path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_render_map_writes_a_png_with_path_and_points(tmp_path: Path) -> None:
    scene = _scene()
    nav = GridNavigator(scene)
    start, goal = (0.5, 0.0, 3.5), (6.5, 0.0, 1.0)
    out = render_map(
        scene,
        tmp_path / "maps" / "map.png",
        nav,
        path=nav.shortest_path(start, goal),
        points={"start": start, "goal": goal},
    )
    assert out == tmp_path / "maps" / "map.png"
    assert _is_png(out)
    image = matplotlib.image.imread(out)
    assert image.shape[0] > 300 and image.shape[1] > 400
    assert np.unique(image.reshape(-1, image.shape[2]), axis=0).shape[0] > 20  # not blank
    assert sorted(p.name for p in out.parent.iterdir()) == ["map.png"]  # no temp file left


def test_render_map_builds_a_navigator_and_accepts_plain_points(
    tmp_path: Path, fixtures_dir: Path
) -> None:
    scene = load("procthor", str(fixtures_dir / "procthor" / "houses" / "house_3703.json"))
    out = render_map(scene, tmp_path / "house.png", show_labels=False, points=[(1.0, 0.0, -1.0)])
    assert _is_png(out)


def test_room_colours_are_stable() -> None:
    assert room_colour("kitchen") == "#f6d7a7"
    assert room_colour("pantry") == room_colour("pantry")
    assert room_colour("pantry").startswith("#")
