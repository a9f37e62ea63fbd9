"""Known points for :mod:`condvln.frames`: published VLN-CE / R2R values and nav-graph samples
written in the Matterport3DSimulator and habitat connectivity formats."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from condvln.frames import (
    habitat_box_from_zup,
    habitat_from_thor,
    habitat_from_zup,
    habitat_yaw_from_thor,
    heading_vector,
    quaternion_to_yaw,
    xyzw_from_wxyz,
    yaw_to_quaternion,
    zup_from_habitat,
)

VLNCE_START_ROTATION = (-0.0, 0.9659258262890683, -0.0, -0.25881904510252063)
"""val_seen episode 1 (R2R path 37), FORMATS.md §1.3."""


def _same_rotation(q1: tuple[float, ...], q2: tuple[float, ...]) -> bool:
    """Unit quaternions q and −q are the same rotation."""
    return abs(abs(float(np.dot(q1, q2))) - 1.0) < 1e-12


def _angle_equal(a: float, b: float) -> bool:
    return abs(math.remainder(a - b, 2.0 * math.pi)) < 1e-9


def test_thor_to_habitat_flips_z_and_yaw() -> None:
    assert habitat_from_thor((1.5, 0.9, -2.25)) == (1.5, 0.9, 2.25)
    assert habitat_yaw_from_thor(30.0) == pytest.approx(-math.radians(30.0))
    # THOR yaw 90° faces THOR +X (clockwise from +Z); in Habitat that is still +X.
    dx, dz = heading_vector(habitat_yaw_from_thor(90.0))
    assert (dx, dz) == pytest.approx((1.0, 0.0), abs=1e-12)


def test_zup_round_trip_and_known_point() -> None:
    assert habitat_from_zup((0.0108, 0.00604, 1.512)) == (0.0108, 1.512, -0.00604)
    rng = np.random.default_rng(0)
    for p in rng.normal(size=(20, 3)):
        assert zup_from_habitat(habitat_from_zup(p)) == pytest.approx(tuple(p), abs=0.0)
    assert habitat_box_from_zup((0, 1, 2), (3, 4, 5)) == ((0.0, 2.0, -4.0), (3.0, 5.0, -1.0))


@pytest.mark.parametrize("degrees", [-180, -150, -90, -15, 0, 15, 30, 90, 179, 210, 330])
def test_yaw_quaternion_round_trip(degrees: float) -> None:
    yaw = math.radians(degrees)
    q = yaw_to_quaternion(yaw)
    assert math.hypot(*q) == pytest.approx(1.0, abs=1e-12)
    assert q[0] == 0.0 and q[2] == 0.0
    assert _angle_equal(quaternion_to_yaw(q), yaw)


def test_identity_faces_minus_z_and_yaw_is_counter_clockwise() -> None:
    assert heading_vector(quaternion_to_yaw((0.0, 0.0, 0.0, 1.0))) == pytest.approx((0.0, -1.0))
    # +90° about +Y (counter-clockwise seen from above) turns −Z into −X.
    assert heading_vector(math.pi / 2) == pytest.approx((-1.0, 0.0), abs=1e-12)


def test_vlnce_real_start_rotation_is_yaw_210_degrees() -> None:
    assert yaw_to_quaternion(math.radians(210.0)) == pytest.approx(VLNCE_START_ROTATION, abs=1e-15)
    assert _angle_equal(quaternion_to_yaw(VLNCE_START_ROTATION), math.radians(210.0))


R2R_PATH_37_HEADING = 2.488
"""R2R val_seen path 37 ``heading`` (rad), FORMATS.md §2.2; its VLN-CE episodes start at 210°."""


def test_r2r_heading_maps_to_vlnce_rotation() -> None:
    """FORMATS §2.2: R2R heading h (clockwise) → yaw −h rounded to 30° (path 37 → episode 1)."""
    step = math.radians(30.0)
    yaw = round(-R2R_PATH_37_HEADING / step) * step
    assert _same_rotation(yaw_to_quaternion(yaw), VLNCE_START_ROTATION)


def test_wxyz_to_xyzw() -> None:
    assert xyzw_from_wxyz((0.7071, 0.0, -0.7071, 0.0)) == (0.0, -0.7071, 0.0, 0.7071)
    assert xyzw_from_wxyz([1, 2, 3, 4]) == (2.0, 3.0, 4.0, 1.0)


# --- Matterport nav graph in both frames ---------------------------------------------------------
# tests/data/mp3d/*format_sample.json: four nodes written in the Matterport3DSimulator
# ``connectivity/*.json`` layout (row-major 4×4 camera-to-world pose, camera ``height`` above
# the floor) and in the habitat connectivity layout (``nodes`` at the floor, Y up).


@pytest.fixture(scope="module")
def mp3d_pair(fixtures_dir: Path) -> list[tuple[str, np.ndarray, float, np.ndarray]]:
    """``(image_id, camera position (Z-up), camera height, habitat node)`` of every node."""
    folder = fixtures_dir / "mp3d"
    mp3d = json.loads((folder / "connectivity_format_sample.json").read_text())
    habitat = json.loads((folder / "habitat_connectivity_format_sample.json").read_text())["nodes"]
    pairs = []
    for node in mp3d:
        pose = np.asarray(node["pose"], dtype=np.float64).reshape(4, 4)  # row-major
        pairs.append(
            (
                node["image_id"],
                pose[:3, 3],
                float(node["height"]),
                np.asarray(habitat[node["image_id"]]),
            )
        )
    return pairs


def test_mp3d_pair_covers_every_node(mp3d_pair: list) -> None:
    assert len(mp3d_pair) == 4


def test_mp3d_reference_node_is_exact() -> None:
    """Node ``5fd70cff…`` of scan GdvgFV5R1Z5 (FORMATS §2.2): MP3D (0.01080, 0.00604, 1.512)
    lies at Habitat x = 0.01080, z = −0.00604."""
    mapped = habitat_from_zup((0.01080, 0.00604, 1.512))
    assert (mapped[0], mapped[2]) == pytest.approx((0.01080, -0.00604), abs=1e-12)


def test_mp3d_transform_is_habitat_sims_rotation(mp3d_pair: list) -> None:
    """habitat-sim loads Z-up scans with the rotation taking −Z to −Y, R_x(−90°)."""
    rotation = Rotation.from_rotvec([-math.pi / 2.0, 0.0, 0.0])
    for _, cam, _, _ in mp3d_pair:
        assert habitat_from_zup(cam) == pytest.approx(tuple(rotation.apply(cam)), abs=1e-12)


def test_mp3d_pair_matches_the_transform_and_no_other_convention(mp3d_pair: list) -> None:
    cams = np.array([c for _, c, _, _ in mp3d_pair])
    habs = np.array([h for _, _, _, h in mp3d_pair])
    mapped = np.array([habitat_from_zup(c) for c in cams])
    assert np.hypot(mapped[:, 0] - habs[:, 0], mapped[:, 2] - habs[:, 2]).max() < 1e-12
    alternatives = {
        "(x, z, y)": np.column_stack([cams[:, 0], cams[:, 1]]),
        "(y, z, -x)": np.column_stack([cams[:, 1], -cams[:, 0]]),
        "(-x, z, -y)": np.column_stack([-cams[:, 0], -cams[:, 1]]),
    }
    for name, xz in alternatives.items():
        wrong = np.hypot(xz[:, 0] - habs[:, 0], xz[:, 1] - habs[:, 2])
        assert np.median(wrong) > 2.0, name


def test_mp3d_habitat_y_is_the_floor_below_the_camera(mp3d_pair: list) -> None:
    """Habitat nodes sit on the floor: camera z minus the node's camera ``height``."""
    for _, cam, height, hab in mp3d_pair:
        assert hab[1] == pytest.approx(cam[2] - height, abs=1e-9)
