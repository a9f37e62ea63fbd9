"""The reference of nDTW / SDTW / CLS in continuous mode, chosen as VLN-CE's ``NDTW`` measure does.

VLN-CE aligns the agent's positions with the episode's dense ground-truth ``locations`` from
``{split}/{split}_gt.json.gz`` (one point per 0.25 m forward step), not with the sparse
``reference_path``. :func:`gt_locations` reads those locations (for the test split from
``test_answers.json.gz``, where CondVLN keeps them); an episode without an entry gets its
``reference_path`` resampled every :data:`VLNCE_STEP` metres by :func:`densify`, and
:func:`fidelity_reference` says which of the two it used, so the evaluator can count them.

>>> densify([[0.0, 0.0, 0.0], [0.0, 0.0, -0.6]]).tolist()
[[0.0, 0.0, 0.0], [0.0, 0.0, -0.25], [0.0, 0.0, -0.5], [0.0, 0.0, -0.6]]
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from condvln.errors import FormatError
from condvln.evaluation.spaces import FloatArray
from condvln.io import read_json
from condvln.vlnce import split_path

VLNCE_STEP = 0.25
"""VLN-CE's forward step (m): the spacing of the ``_gt`` locations and of :func:`densify`."""

ReferenceSource = Literal["gt", "densified"]


def densify(path: ArrayLike, step: float = VLNCE_STEP) -> FloatArray:
    """Points every ``step`` metres of arc length along the polyline ``path``, plus its end.

    The first point is ``path[0]``, the last ``path[-1]``; a one-point path stays one point.
    """
    points = np.asarray(path, dtype=np.float64)
    seg = np.linalg.norm(np.diff(points, axis=0), axis=1)
    arc = np.concatenate([[0.0], np.cumsum(seg)])
    total = float(arc[-1])
    stations = np.arange(0.0, total, step)  # empty for a zero-length path
    if len(stations) == 0 or total - stations[-1] > 1e-9:
        stations = np.append(stations, total)
    keep = np.concatenate([[True], seg > 0])  # np.interp needs increasing arc lengths
    dense = np.stack([np.interp(stations, arc[keep], points[keep, k]) for k in range(3)], axis=1)
    dense[0], dense[-1] = points[0], points[-1]
    return dense


def gt_locations(
    dataset_dir: str | os.PathLike[str], split: str
) -> tuple[dict[str, Any], str | None]:
    """``{episode id: locations}`` of a split's ground truth, and the file it came from.

    Train / val splits read ``{split}_gt.json.gz``; the test split reads the ``gt`` entry of
    ``test_answers.json.gz``. A missing file gives ``({}, None)`` (every episode is then
    densified); a malformed one raises :class:`FormatError`.
    """
    if split == "test":
        path = split_path(dataset_dir, split, "_answers")
        pick = lambda entry: entry.get("gt", {}).get("locations")  # noqa: E731
    else:
        path = split_path(dataset_dir, split, "_gt")
        pick = lambda entry: entry.get("locations")  # noqa: E731
    if not path.is_file():
        return {}, None
    doc = read_json(path, FormatError)
    if not isinstance(doc, dict) or not all(isinstance(v, dict) for v in doc.values()):
        raise FormatError("must map episode ids to objects", file=str(path))
    locations = {key: pick(entry) for key, entry in doc.items()}
    return {k: v for k, v in locations.items() if v}, str(path)


def fidelity_reference(
    episode: Mapping[str, Any], locations: Mapping[str, Any]
) -> tuple[Any, ReferenceSource]:
    """The reference of one episode: its ``_gt`` locations, else its densified reference path."""
    gt = locations.get(str(episode["episode_id"]))
    if gt is not None:
        return gt, "gt"
    return densify(episode["reference_path"]), "densified"
