"""Pixel sensors: analytic depth, semantic ids, determinism, odd camera poses, habitat dicts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from condvln.errors import ConfigError
from condvln.scene.mesh import compose_scene_mesh
from condvln.scene.model import Room, Scene, SceneObject
from condvln.sim import FORWARD, Simulator
from condvln.sim.habitat_obs import habitat_observation
from condvln.sim.protocol import ObservationProtocol, parse_protocol
from condvln.sim.render import BACKGROUND, Renderer, camera_rays

ALL = ("rgb", "depth", "semantic")


def _room_scene() -> Scene:
    """A 6 × 6 m room (x, z in [0, 6]) with a 1 m cube whose front face is the plane z = 2.5."""
    cube = SceneObject(
        id="cube_1", category="box", label="Box", center=(3.0, 0.5, 2.0), size=(1.0, 1.0, 1.0)
    )
    side = SceneObject(
        id="stool_1", category="stool", label="Stool", center=(0.8, 0.3, 3.0), size=(0.6, 0.6, 0.6)
    )
    room = Room(
        id="r",
        room_type="living room",
        label="LivingRoom",
        objects=(cube, side),
        floor_polygon=((0, 0), (6, 0), (6, 6), (0, 6)),
        ceiling_height=2.5,
    )
    return Scene(id="room", source="test", rooms=(room,))


@pytest.fixture(scope="module")
def renderer() -> Renderer:
    return Renderer(compose_scene_mesh(_room_scene()))


def _metres(width: int = 64, height: int = 48, hfov: float = 90.0) -> ObservationProtocol:
    camera = {"width": width, "height": height, "hfov": hfov}
    return parse_protocol(
        {
            "sensors": list(ALL),
            "rgb": camera,
            "depth": {**camera, "normalize_depth": False, "max_depth": 10.0},
            "semantic": camera,
        }
    )


def test_defaults_follow_vlnce_and_habitat() -> None:
    p = ObservationProtocol()
    assert p.sensors == () and p.detections
    assert (p.rgb.width, p.rgb.height, p.rgb.hfov, p.rgb.position) == (224, 224, 90.0, (0, 1.25, 0))
    assert (p.depth.width, p.depth.height, p.depth.hfov) == (256, 256, 90.0)
    assert (p.depth.min_depth, p.depth.max_depth, p.depth.normalize_depth) == (0.0, 10.0, True)
    assert p.semantic.optics == p.depth.optics
    dumped = p.model_dump(mode="json")
    assert dumped["depth"]["max_depth"] == 10.0 and dumped["rgb"]["hfov"] == 90.0
    with pytest.raises(ConfigError, match="max_depth"):
        parse_protocol({"depth": {"min_depth": 3.0, "max_depth": 2.0}})
    with pytest.raises(ConfigError, match="sensors"):
        parse_protocol({"sensors": ["lidar"]})


def test_depth_equals_the_analytic_distance_to_a_box_face(renderer: Renderer) -> None:
    protocol = _metres()
    table = renderer.table
    # a camera 0.5 m up (below the cube's top, between its sides) sees only its front face
    low = protocol.model_copy(
        update={
            "depth": protocol.depth.model_copy(update={"position": (0, 0.5, 0)}),
            "semantic": protocol.semantic.model_copy(update={"position": (0, 0.5, 0)}),
        }
    )
    front = renderer.render((3.0, 0.0, 5.0), 0.0, low)
    on_cube = front["semantic"][..., 0] == table.object_ids.index("cube_1")
    assert on_cube.sum() > 50
    # the front face z = 2.5 is perpendicular to the optical axis: z-depth 5 − 2.5 everywhere
    assert np.abs(front["depth"][..., 0][on_cube] - 2.5).max() < 1e-3
    images = renderer.render((3.0, 0.0, 5.0), 0.0, protocol)
    depth, semantic = images["depth"][..., 0], images["semantic"][..., 0]
    # a floor pixel: the ray (x, y, −1) from 1.25 m up meets y = 0 at z-depth 1.25 / −y
    rays = camera_rays(64, 48, 90.0).reshape(48, 64, 3)
    row, col = 47, 5
    assert table.kinds[semantic[row, col]] == "floor"
    assert depth[row, col] == pytest.approx(1.25 / -rays[row, col, 1], abs=1e-3)
    # turned left by 90° the camera faces −X: the wall x = 0 is 3 m away (slab 5 mm thick)
    left = renderer.render((3.0, 0.0, 5.0), math.pi / 2, protocol)
    centre = left["depth"][24, 32, 0]
    assert table.kinds[left["semantic"][24, 32, 0]] == "wall"
    assert centre == pytest.approx(3.0 - 0.005, abs=1e-3)


def test_normalised_depth_is_clipped_and_scaled(renderer: Renderer) -> None:
    camera = {"width": 32, "height": 32}
    protocol = parse_protocol(
        {"sensors": ["depth"], "depth": {**camera, "min_depth": 0.5, "max_depth": 2.0}}
    )
    depth = renderer.render((3.0, 0.0, 5.0), 0.0, protocol)["depth"]
    assert depth.dtype == np.float32 and depth.shape == (32, 32, 1)
    assert depth.min() >= 0.0 and depth.max() == 1.0  # the 2.5 m cube face clips at 2 m
    assert protocol.depth.metres(depth).max() == pytest.approx(2.0)


def test_semantic_centre_is_the_object_straight_ahead(renderer: Renderer) -> None:
    protocol = _metres(65, 65, 60.0)
    low = protocol.model_copy(
        update={"semantic": protocol.semantic.model_copy(update={"position": (0, 0.5, 0)})}
    )
    images = renderer.render((3.0, 0.0, 5.0), 0.0, low)
    centre = int(images["semantic"][32, 32, 0])
    assert renderer.table.object_ids[centre] == "cube_1"
    assert renderer.table.categories[centre] == "box"
    # facing the stool (at x = 0.8, z = 3) from (3, 5): it is straight ahead
    yaw = math.atan2(-(0.8 - 3.0), -(3.0 - 5.0))
    low = renderer.render((3.0, 0.0, 5.0), yaw, _metres(65, 65, 60.0))
    # the stool is 0.6 m tall, the camera at 1.25 m: look at the pixel column's lower half
    column = low["semantic"][:, 32, 0]
    assert renderer.table.object_ids.index("stool_1") in set(column.tolist())


def test_same_pose_renders_identical_bytes(renderer: Renderer) -> None:
    protocol = _metres()
    first = renderer.render((2.2, 0.0, 4.1), 0.7, protocol)
    again = renderer.render((2.2, 0.0, 4.1), 0.7, protocol)
    fresh = Renderer(compose_scene_mesh(_room_scene())).render((2.2, 0.0, 4.1), 0.7, protocol)
    for name in ALL:
        assert first[name].tobytes() == again[name].tobytes() == fresh[name].tobytes()
    assert first["rgb"].dtype == np.uint8 and first["rgb"].shape == (48, 64, 3)
    assert first["semantic"].dtype == np.int32 and first["semantic"].shape == (48, 64, 1)


def test_camera_inside_a_wall_or_outside_gets_a_defined_image(renderer: Renderer) -> None:
    protocol = _metres(32, 32)
    inside = renderer.render((0.0, 0.0, 3.0), 0.3, protocol)  # in the x = 0 wall slab
    for image in inside.values():
        assert np.isfinite(image.astype(np.float64)).all()
    assert inside["depth"].max() <= 10.0
    # far outside, looking away from the house (yaw π/2 faces −X): nothing is hit
    away = renderer.render((-20.0, 0.0, 3.0), math.pi / 2, protocol)
    assert (away["semantic"] == BACKGROUND).all()
    assert (away["depth"] == 0.0).all() and (away["rgb"] == 0).all()
    # far outside, looking at the house: its outer wall
    towards = renderer.render((-20.0, 0.0, 3.0), -math.pi / 2, protocol)
    kinds = {renderer.table.kinds[i] for i in np.unique(towards["semantic"])}
    assert "wall" in kinds
    assert towards["depth"][16, 16, 0] == 10.0  # 20 m away: clipped at max_depth


def test_simulator_gives_images_and_habitat_dicts() -> None:
    scene = _room_scene()
    protocol = {"sensors": list(ALL), "detections": False, "rgb": {"width": 40, "height": 30}}
    sim = Simulator(scene, protocol)
    obs = sim.reset((3.0, 0.0, 5.0), 0.0, instruction="Go to the box.", step_budget=5)
    assert obs.detections == ()
    assert obs.images["rgb"].shape == (30, 40, 3)
    assert obs.images["depth"].shape == (256, 256, 1)
    obs = sim.step(FORWARD)
    start, start_yaw = sim.start_pose
    out = habitat_observation(obs, start_position=start, start_yaw=start_yaw)
    assert set(out) == {"rgb", "depth", "semantic", "instruction", "heading", "compass", "gps"}
    assert out["instruction"] == {"text": "Go to the box.", "tokens": [], "trajectory_id": None}
    assert out["gps"].dtype == np.float32 and out["gps"].tolist() == pytest.approx([0.25, 0.0])
    assert out["compass"].shape == (1,) and out["heading"].shape == (1,)
    # the symbolic detections are still there when not switched off
    symbolic = Simulator(scene, {"sensors": ["depth"]})
    first = symbolic.reset((3.0, 0.0, 5.0), 0.0, instruction="Go.", step_budget=5)
    assert {d.category for d in first.detections} >= {"box"}
    assert set(first.images) == {"depth"}
