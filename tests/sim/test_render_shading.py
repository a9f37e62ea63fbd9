"""RGB shading and materials: the Lambert formula, walls and floors that differ, a golden image,
and depth / semantic images byte-identical to the flat-shaded renderer they replaced."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest

from condvln.nav import GridNavigator
from condvln.scene.mesh import category_color
from condvln.scene.model import Room, Scene, SceneObject
from condvln.scene.sources import load
from condvln.sim.protocol import parse_protocol
from condvln.sim.render import (
    AMBIENT,
    FILL,
    FILL_LIGHT,
    KEY,
    KEY_LIGHT,
    TILE_ALBEDO,
    WOOD_ALBEDO,
    Renderer,
)

DATA = Path(__file__).resolve().parent.parent / "data"
HOUSE = DATA / "procthor" / "houses" / "1310.json"
GOLDEN = DATA / "golden" / "render_procthor_1310.png"
POSES = (((1.8, -0.8), 0.0), ((1.8, -6.6), math.pi), ((7.8, -0.8), 0.6), ((6.2, -8.2), -2.6))
"""Standing points in the living room, kitchen, bedroom and bathroom of house 1310."""

FLAT_RENDERER_SHA256 = "c6f58e4a381027b0b4cd2aec47435d1788172a11824db915ae3cdb887510047d"
"""SHA-256 of the depth and semantic images of :func:`_identity_images` as the flat-shaded
renderer (commit ad0c4d9, before materials) produced them."""


def _square_room(room_type: str = "bedroom") -> Scene:
    """A bare 6 × 6 m room (x, z in [0, 6]) with a 1 m cube whose +Z face is the plane z = 2.5."""
    cube = SceneObject(
        id="cube_1", category="box", label="Box", center=(3.0, 0.5, 2.0), size=(1.0, 1.0, 1.0)
    )
    room = Room(
        id="r",
        room_type=room_type,
        label=room_type,
        objects=(cube,),
        floor_polygon=((0, 0), (6, 0), (6, 6), (0, 6)),
        ceiling_height=2.5,
    )
    return Scene(id="room", source="test", rooms=(room,))


@pytest.fixture(scope="module")
def house() -> tuple[Renderer, GridNavigator]:
    scene = load("procthor", str(HOUSE))
    return Renderer.from_scene(scene), GridNavigator(scene)


def _pixels_of(images: dict[str, np.ndarray], renderer: Renderer, kind: str) -> np.ndarray:
    kinds = np.asarray(renderer.table.kinds)[images["semantic"][..., 0]]
    return images["rgb"][kinds == kind].astype(np.float64)


def test_a_plain_face_is_albedo_times_the_lambert_light() -> None:
    renderer = Renderer.from_scene(_square_room())
    camera = {"width": 33, "height": 33, "hfov": 40.0, "position": (0.0, 0.5, 0.0)}
    protocol = parse_protocol({"sensors": ["rgb"], "rgb": camera})
    rgb = renderer.render((3.0, 0.0, 5.0), 0.0, protocol)["rgb"]
    key = np.asarray(KEY_LIGHT) / np.linalg.norm(KEY_LIGHT)
    fill = np.asarray(FILL_LIGHT) / np.linalg.norm(FILL_LIGHT)
    # the cube's face seen here faces +Z: n·k = k_z, n·f = f_z (negative: no fill)
    light = AMBIENT + KEY * max(key[2], 0.0) + FILL * max(fill[2], 0.0)
    expected = [int(c * light + 0.5) for c in category_color("box")]
    assert rgb[16, 16].tolist() == expected
    assert (rgb[12:21, 12:21] == expected).all()  # a plain material: no pattern


def test_walls_at_four_angles_and_floor_and_ceiling_all_differ() -> None:
    renderer = Renderer.from_scene(_square_room())
    camera = {"width": 48, "height": 48}
    protocol = parse_protocol({"sensors": ["rgb", "semantic"], "rgb": camera, "semantic": camera})
    means = []
    for yaw in (0.0, math.pi / 2, math.pi, -math.pi / 2):  # facing −Z, −X, +Z, +X walls
        images = renderer.render((3.0, 0.0, 4.5), yaw, protocol)
        ahead = {k: v[16:32, 16:32] for k, v in images.items()}  # the wall straight ahead
        means.append(_pixels_of(ahead, renderer, "wall").mean())
    gaps = np.diff(np.sort(means))
    assert gaps.min() > 10.0, means  # four orientations, four clearly different brightnesses
    images = renderer.render((3.0, 0.0, 4.5), math.pi / 2, protocol)
    floor = _pixels_of(images, renderer, "floor")
    ceiling = _pixels_of(images, renderer, "ceiling")
    wall = _pixels_of(images, renderer, "wall")
    assert min(abs(floor.mean() - wall.mean()), abs(ceiling.mean() - wall.mean())) > 10.0
    # wood: red over blue as its albedo, and planks (tints and seams) vary the floor
    assert floor[:, 0].mean() > floor[:, 2].mean() + 30 and floor.std(axis=0).max() > 5.0
    assert WOOD_ALBEDO[0] > WOOD_ALBEDO[2]


def test_kitchens_get_tiles_and_other_rooms_wood() -> None:
    camera = {"width": 32, "height": 32}
    protocol = parse_protocol({"sensors": ["rgb", "semantic"], "rgb": camera, "semantic": camera})
    floors = {}
    for room_type in ("kitchen", "bedroom"):
        renderer = Renderer.from_scene(_square_room(room_type))
        images = renderer.render((3.0, 0.0, 4.5), math.pi / 2, protocol)
        floors[room_type] = _pixels_of(images, renderer, "floor").mean(axis=0)
    tile_ratio = TILE_ALBEDO[2] / TILE_ALBEDO[0]
    assert floors["kitchen"][2] / floors["kitchen"][0] == pytest.approx(tile_ratio, abs=0.05)
    assert floors["bedroom"][2] / floors["bedroom"][0] < 0.6  # wood


def _identity_images(renderer: Renderer, navigator: GridNavigator) -> list[dict[str, np.ndarray]]:
    protocol = parse_protocol(
        {
            "sensors": ["rgb", "depth", "semantic"],
            "rgb": {"width": 160, "height": 120},
            "depth": {"width": 96, "height": 72, "normalize_depth": False},
            "semantic": {"width": 80, "height": 60, "position": (0.0, 0.8, 0.0)},
        }
    )
    poses = (*POSES, ((-20.0, 3.0), 1.3))  # the last one outside the house
    return [renderer.render(navigator.point(x, z), yaw, protocol) for (x, z), yaw in poses]


def test_depth_and_semantic_are_byte_identical_to_the_flat_renderer(
    house: tuple[Renderer, GridNavigator],
) -> None:
    digest = hashlib.sha256()
    for images in _identity_images(*house):
        digest.update(images["depth"].tobytes())
        digest.update(images["semantic"].tobytes())
    assert digest.hexdigest() == FLAT_RENDERER_SHA256


def test_golden_image_of_a_procthor_house(house: tuple[Renderer, GridNavigator]) -> None:
    renderer, navigator = house
    protocol = parse_protocol({"sensors": ["rgb"], "rgb": {"width": 160, "height": 120}})
    views = [renderer.render(navigator.point(x, z), yaw, protocol)["rgb"] for (x, z), yaw in POSES]
    image = np.vstack([np.hstack(views[:2]), np.hstack(views[2:])]).astype(np.float64)
    golden = iio.imread(GOLDEN).astype(np.float64)
    assert image.shape == golden.shape == (240, 320, 3)
    assert np.abs(image - golden).mean() < 1.0
    assert golden.std() > 30.0  # the golden image is a real view, not a flat fill
