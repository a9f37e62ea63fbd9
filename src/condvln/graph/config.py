"""Thresholds of the spatial predicates: one versioned, frozen, hashable configuration.

Every semantic predicate is three-valued. It has a *holds* threshold and a *fails* threshold; a
value on the "holds" side of (or on) the first is TRUE, a value on the "fails" side of (or on) the
second is FALSE, and a value strictly between them lies in the dead band and is UNDECIDED, so a
borderline fact is never used as a label.

The configuration is stamped into every exported graph and episode through :attr:`config_hash`,
the first 16 hex digits of the SHA-256 of its canonical JSON (sorted keys, shortest floats), so
any label can be recomputed from the thresholds that produced it.

>>> cfg = RelationConfig()
>>> cfg.near_holds, cfg.near_fails, cfg.far_fails, cfg.far_holds
(0.5, 1.0, 2.0, 3.0)
>>> cfg.config_hash == RelationConfig().config_hash
True
>>> RelationConfig(near_holds=0.4).config_hash == cfg.config_hash
False
>>> parse_config({"near_holds": 1.5})
Traceback (most recent call last):
...
condvln.errors.ConfigError: invalid relation config: near needs near_holds < near_fails (got 1.5 and 1.0)
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict, Field, model_validator

from condvln.errors import ConfigError
from condvln.io import dumps_json

#: Version of the predicate definitions; bump it when a default or a rule changes meaning.
CONFIG_VERSION = 1


class RelationConfig(BaseModel):
    """Thresholds of the relation predicates (lengths in metres, angles in degrees).

    Boundaries: a value equal to a *holds* threshold is TRUE and a value equal to a *fails*
    threshold is FALSE; the dead band is the open interval between them.

    Attributes:
        version: Version of the predicate definitions (:data:`CONFIG_VERSION`).
        near_holds: "near" is TRUE when the used distance is ≤ this. 0.5 m surface to surface is
            within arm's reach: people call such objects "next to" / "near" each other.
        near_fails: "near" is FALSE when the used distance is ≥ this. Beyond 1 m of free space
            between two objects, "near" is no longer a safe description in a room.
        far_fails: "far from" is FALSE when the used distance is ≤ this. At 2 m or less the
            objects share a part of a typical room (3–5 m across), so "far" would be arguable.
        far_holds: "far from" is TRUE when the used distance is ≥ this. 3 m of free space is most
            of a typical room's width: clearly far apart.
        higher_fails: "higher than" is FALSE when δy (subject − target centre height) is ≤ this.
            10 cm is within the modelling noise of source boxes (centres of resting objects).
        higher_holds: "higher than" is TRUE when δy ≥ this. A 30 cm offset of centres is clearly
            visible at room scale (a cup on a counter against a chair seat).
        overlap_fails: the footprint condition of "above" is FALSE when the overlap ratio (area
            of the intersection of the two x–z footprints over the smaller footprint) is ≤ this.
            10 % is a corner touch, not one object over another.
        overlap_holds: the footprint condition is TRUE when the overlap ratio ≥ this: at least
            half of the smaller object lies over (or under) the other.
        stack_horizontal_holds: without boxes on both objects, the footprint condition of
            "above" is TRUE when the horizontal centre distance is ≤ this. 20 cm: the centres sit
            on one vertical line within the size of a small object.
        stack_horizontal_fails: … and FALSE when the horizontal centre distance is ≥ this. 50 cm
            is beside, not over.
        level_angle: a displacement whose elevation is within ±this of the horizontal is
            "level". 30° splits the elevation range [−90°, 90°] into three equal bins, as the
            eight 45° compass sectors split the azimuth.
        min_horizontal: below this horizontal distance the compass direction is undefined (bin
            ``"none"``). 1 cm is below the precision of the source coordinates.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = CONFIG_VERSION
    near_holds: float = Field(0.5, gt=0.0)
    near_fails: float = Field(1.0, gt=0.0)
    far_fails: float = Field(2.0, gt=0.0)
    far_holds: float = Field(3.0, gt=0.0)
    higher_fails: float = Field(0.1, ge=0.0)
    higher_holds: float = Field(0.3, gt=0.0)
    overlap_fails: float = Field(0.1, ge=0.0, lt=1.0)
    overlap_holds: float = Field(0.5, gt=0.0, le=1.0)
    stack_horizontal_holds: float = Field(0.2, ge=0.0)
    stack_horizontal_fails: float = Field(0.5, gt=0.0)
    level_angle: float = Field(30.0, gt=0.0, lt=90.0)
    min_horizontal: float = Field(0.01, ge=0.0)

    @model_validator(mode="after")
    def _check_order(self) -> RelationConfig:
        """Each dead band must be non-empty, and "near" and "far from" must never both hold."""
        pairs = [
            ("near", "near_holds", "near_fails"),
            ("near/far", "near_fails", "far_fails"),
            ("far from", "far_fails", "far_holds"),
            ("higher than", "higher_fails", "higher_holds"),
            ("above", "overlap_fails", "overlap_holds"),
            ("above", "stack_horizontal_holds", "stack_horizontal_fails"),
        ]
        for name, low, high in pairs:
            lo, hi = getattr(self, low), getattr(self, high)
            ok = lo <= hi if name == "near/far" else lo < hi
            if not ok:
                op = "<=" if name == "near/far" else "<"
                raise ValueError(f"{name} needs {low} {op} {high} (got {lo} and {hi})")
        if self.version != CONFIG_VERSION:
            raise ValueError(f"version must be {CONFIG_VERSION}, got {self.version}")
        return self

    def canonical_json(self) -> bytes:
        """The canonical JSON of the configuration (sorted keys, shortest float form)."""
        return dumps_json(self.model_dump(mode="json"))

    @property
    def config_hash(self) -> str:
        """First 16 hex digits of the SHA-256 of :meth:`canonical_json`."""
        return hashlib.sha256(self.canonical_json()).hexdigest()[:16]


def parse_config(data: Mapping[str, Any]) -> RelationConfig:
    """Build a :class:`RelationConfig` from a mapping, with a one-line :class:`ConfigError`.

    Args:
        data: Threshold values by field name; missing fields take their defaults.

    Returns:
        The validated configuration.

    Raises:
        ConfigError: An unknown field, a wrong type or an inconsistent set of thresholds.
    """
    try:
        return RelationConfig.model_validate(dict(data))
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        prefix = f"{where}: " if where else ""
        raise ConfigError(f"invalid relation config: {prefix}{msg}") from None
