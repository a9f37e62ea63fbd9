"""Known points for :mod:`condvln.frames`, including the real Matterport / VLN-CE samples."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

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


def test_r2r_heading_maps_to_vlnce_rotation(fixtures_dir: Path) -> None:
    """FORMATS §2.2: R2R heading h (clockwise) → yaw −h rounded to 30° (path 37 → episode 1)."""
    entries = json.loads((fixtures_dir / "r2r" / "R2R_val_seen_excerpt.json").read_text())
    heading = next(e["heading"] for e in entries["entries"] if e["path_id"] == 37)
    step = math.radians(30.0)
    yaw = round(-heading / step) * step
    assert _same_rotation(yaw_to_quaternion(yaw), VLNCE_START_ROTATION)


def test_wxyz_to_xyzw() -> None:
    assert xyzw_from_wxyz((0.7071, 0.0, -0.7071, 0.0)) == (0.0, -0.7071, 0.0, 0.7071)
    assert xyzw_from_wxyz([1, 2, 3, 4]) == (2.0, 3.0, 4.0, 1.0)


# --- Matterport connectivity pair (GdvgFV5R1Z5) --------------------------------------------------


@pytest.fixture(scope="module")
def mp3d_pair(fixtures_dir: Path) -> list[tuple[str, np.ndarray, float, np.ndarray]]:
    """``(image_id, camera position (Z-up), camera height, habitat node)`` of shared nodes."""
    folder = fixtures_dir / "mp3d"
    mp3d = json.loads((folder / "mp3dsim_connectivity_GdvgFV5R1Z5.json").read_text())
    habitat = json.loads((folder / "habitat_connectivity_GdvgFV5R1Z5.json").read_text())["nodes"]
    pairs = []
    for node in mp3d:
        if node["image_id"] in habitat:
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


def test_mp3d_pair_covers_ten_nodes(mp3d_pair: list) -> None:
    assert len(mp3d_pair) == 10


def test_mp3d_reference_node_is_exact(mp3d_pair: list) -> None:
    """Node 5fd70cff… (FORMATS §2.2) is the one node the Habitat graph kept unsnapped."""
    (cam, hab) = next((c, h) for i, c, _, h in mp3d_pair if i.startswith("5fd70cff"))
    mapped = habitat_from_zup(cam)
    assert mapped[0] == pytest.approx(hab[0], abs=1e-6)
    assert mapped[2] == pytest.approx(hab[2], abs=1e-6)


def test_mp3d_pair_matches_transform_up_to_navmesh_snapping(mp3d_pair: list) -> None:
    """All nodes agree with ``(x, y, z) → (x, z, −y)`` to within the navmesh snap (≤ 0.51 m).

    The Habitat graph stores navmesh-snapped points, so only the reference node is exact (see
    above); the other nine move 0.05–0.50 m horizontally. Every other axis convention is off by
    metres, so the transform is still pinned down by the data.
    """
    cams = np.array([c for _, c, _, _ in mp3d_pair])
    habs = np.array([h for _, _, _, h in mp3d_pair])
    mapped = np.array([habitat_from_zup(c) for c in cams])
    residual = np.hypot(mapped[:, 0] - habs[:, 0], mapped[:, 2] - habs[:, 2])
    assert residual.max() < 0.51
    assert np.median(residual) < 0.15
    alternatives = {
        "(x, z, y)": np.column_stack([cams[:, 0], cams[:, 1]]),
        "(y, z, -x)": np.column_stack([cams[:, 1], -cams[:, 0]]),
        "(-x, z, -y)": np.column_stack([-cams[:, 0], -cams[:, 1]]),
    }
    for name, xz in alternatives.items():
        wrong = np.hypot(xz[:, 0] - habs[:, 0], xz[:, 1] - habs[:, 2])
        assert np.median(wrong) > 2.0, name


def test_mp3d_habitat_y_is_navmesh_floor_above_camera_base(mp3d_pair: list) -> None:
    """Habitat y is the navmesh floor: ``z_cam − height`` plus 0.155–0.27 m (not exact).

    Eight of the ten nodes share the floor height 0.166666 exactly; the camera base
    ``z_cam − height`` lies 0.16 ± 0.01 m below it (0.27 m for the one node on a raised floor).
    """
    gaps = np.array([h[1] - (c[2] - height) for _, c, height, h in mp3d_pair])
    assert gaps.min() > 0.15 and gaps.max() < 0.28
    floors = [h[1] for *_, h in mp3d_pair]
    assert sum(abs(y - 0.16666600108146667) < 1e-12 for y in floors) == 8
