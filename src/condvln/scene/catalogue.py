"""The furniture and object catalogue of the procedural house generator, kept as data.

``condvln/data/catalogue.json`` lists room types (realistic areas and proportions) and object
categories: a realistic size, how the object stands (against a wall, in the open, on a
receptacle's top, mounted on a wall), how likely each room type holds it, and whether a room may
hold several. This module validates that file once and hands out the parsed, cached result.

Sizes are local: ``(width, height, depth)`` with the depth along the direction the object faces.

>>> cat = load_catalogue()
>>> len(cat.categories) >= 60
True
>>> cat.category("coffee table").placement, cat.category("cup").on[0]
('open', 'counter top')
>>> cat.room_types["kitchen"].label
'Kitchen'
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from condvln.errors import ConfigError
from condvln.scene.labels import normalize_category, normalize_room_type

Placement = Literal["wall", "open", "surface", "wall_mounted"]
Relation = Literal["front", "beside", "around", "above"]

_FROZEN = ConfigDict(extra="forbid", frozen=True)


class RoomTypeSpec(BaseModel):
    """Realistic proportions of one room type.

    Attributes:
        label: Source-style label ("LivingRoom").
        area: Range of floor areas in m².
        min_side: Shortest acceptable side in metres.
        max_aspect: Largest acceptable ratio of long side to short side.
    """

    model_config = _FROZEN

    label: str
    area: tuple[float, float]
    min_side: float = Field(gt=0.0)
    max_aspect: float = Field(ge=1.0)

    @field_validator("area")
    @classmethod
    def _ordered(cls, value: tuple[float, float]) -> tuple[float, float]:
        if not 0.0 < value[0] <= value[1]:
            raise ValueError(f"must be 0 < min <= max, got {value}")
        return value


class Near(BaseModel):
    """Placement next to an anchor object of the same room.

    Attributes:
        anchors: Anchor categories, in order of preference (``"door"`` names the room's doors).
        relation: ``front`` (facing the anchor's front), ``beside`` (left or right of it, flush
            with its back), ``around`` (any side, facing it) or ``above`` (on the wall above it).
        gap: Distance kept from the anchor in metres.
        required: Place the object only when an anchor exists.
    """

    model_config = _FROZEN

    anchors: tuple[str, ...] = Field(min_length=1)
    relation: Relation
    gap: float = Field(default=0.0, ge=0.0)
    required: bool = False


class CategorySpec(BaseModel):
    """One object category of the catalogue.

    Attributes:
        name: Normalised category name ("coffee table").
        label: Source-style label ("CoffeeTable").
        size: Local ``(width, height, depth)`` in metres.
        placement: ``wall``, ``open``, ``surface`` or ``wall_mounted``.
        rooms: Probability that a room of each type holds at least one.
        max_count: Most instances in one room (2 or more makes names ambiguous).
        extra_probability: Probability of each further instance up to ``max_count``.
        receptacle: Whether small objects can stand on its top.
        on: Receptacle categories a ``surface`` object can sit on.
        mount_height: Height of the bottom edge of a ``wall_mounted`` object.
        near: Optional anchor placement.
    """

    model_config = _FROZEN

    name: str
    label: str
    size: tuple[float, float, float]
    placement: Placement
    rooms: dict[str, float]
    max_count: int = Field(default=1, ge=1, le=6)
    extra_probability: float = Field(default=0.0, ge=0.0, le=1.0)
    receptacle: bool = False
    on: tuple[str, ...] = ()
    mount_height: float | None = Field(default=None, gt=0.0)
    near: Near | None = None

    @field_validator("name")
    @classmethod
    def _normalised(cls, value: str) -> str:
        if normalize_category(value) != value:
            raise ValueError(f"must be normalised ({normalize_category(value)!r}), got {value!r}")
        return value

    @field_validator("size")
    @classmethod
    def _positive(cls, value: tuple[float, float, float]) -> tuple[float, float, float]:
        if min(value) <= 0.0:
            raise ValueError(f"must be positive on every axis, got {value}")
        return value

    @field_validator("rooms")
    @classmethod
    def _probabilities(cls, value: dict[str, float]) -> dict[str, float]:
        for room_type, p in value.items():
            if normalize_room_type(room_type) != room_type or not 0.0 <= p <= 1.0:
                raise ValueError(f"needs normalised room types and p in [0, 1], got {room_type!r}")
        return value

    @model_validator(mode="after")
    def _placement_fields(self) -> CategorySpec:
        if (self.placement == "surface") != bool(self.on):
            raise ValueError("'on' is required for, and only for, surface objects")
        if (self.placement == "wall_mounted") != (self.mount_height is not None):
            raise ValueError("'mount_height' is required for, and only for, wall-mounted objects")
        return self

    @property
    def footprint(self) -> float:
        """Floor area of the object in m²."""
        return self.size[0] * self.size[2]


class Catalogue(BaseModel):
    """The whole catalogue: room types and object categories.

    Attributes:
        source: Provenance and licence note of the data.
        version: Version of the catalogue data (stamped into generated scenes).
        room_types: Room type name → proportions.
        categories: All categories, in file order (the generator's order).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    source: str = Field(alias="_source", min_length=1)
    version: int = Field(ge=1)
    room_types: dict[str, RoomTypeSpec]
    categories: tuple[CategorySpec, ...]

    @model_validator(mode="after")
    def _references(self) -> Catalogue:
        names = [c.name for c in self.categories]
        if len(set(names)) != len(names):
            raise ValueError("category names must be unique")
        receptacles = {c.name for c in self.categories if c.receptacle}
        for cat in self.categories:
            unknown_rooms = sorted(set(cat.rooms) - set(self.room_types))
            bad_on = [r for r in cat.on if r not in receptacles]
            bad_anchor = [
                a for a in (cat.near.anchors if cat.near else ()) if a != "door" and a not in names
            ]
            if unknown_rooms or bad_on or bad_anchor:
                raise ValueError(
                    f"category {cat.name!r}: unknown room types {unknown_rooms}, "
                    f"non-receptacles {bad_on} or anchors {bad_anchor}"
                )
        return self

    def category(self, name: str) -> CategorySpec:
        """The category called ``name`` (``KeyError`` if absent)."""
        for cat in self.categories:
            if cat.name == name:
                return cat
        raise KeyError(name)


def parse_catalogue(data: bytes) -> Catalogue:
    """Validate catalogue JSON bytes; a :class:`ConfigError` names the first problem.

    >>> parse_catalogue(b'{"version": 1}')
    Traceback (most recent call last):
    ...
    condvln.errors.ConfigError: catalogue: field '_source': Field required
    """
    try:
        return Catalogue.model_validate(orjson.loads(data))
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"catalogue: not valid JSON ({exc})") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"catalogue: field '{where}': {err['msg']}") from None


@functools.cache
def load_catalogue() -> Catalogue:
    """The packaged catalogue (``condvln/data/catalogue.json``), parsed once and cached."""
    data = resources.files("condvln").joinpath("data/catalogue.json").read_bytes()
    return parse_catalogue(data)
