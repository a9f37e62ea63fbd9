"""Normalised names for object categories and room types.

Sources spell labels in many ways ("CoffeeTable", "coffee_table", "LivingRoom", "living_room");
everything downstream (relations, instructions, metrics) sees one lower-case, space-separated form.

>>> normalize_category("CoffeeTable")
'coffee table'
>>> normalize_category("TVStand")
'tv stand'
>>> normalize_category("Dog_Bed")
'dog bed'
>>> normalize_room_type("LivingRoom")
'living room'
>>> normalize_room_type("home_office")
'office'
"""

from __future__ import annotations

import re

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[\s_\-#/]+")

ROOM_TYPE_ALIASES: dict[str, str] = {
    "livingroom": "living room",
    "living": "living room",
    "lounge": "living room",
    "familyroom": "living room",
    "family room": "living room",
    "television room": "living room",
    "tv": "living room",
    "diningroom": "dining room",
    "dining booth": "dining room",
    "bed room": "bedroom",
    "childs room": "bedroom",
    "bath room": "bathroom",
    "toilet": "bathroom",
    "corridor": "hallway",
    "hall": "hallway",
    "lobby": "hallway",
    "entryway": "hallway",
    "home office": "office",
    "study": "office",
    "library": "office",
    "laundryroom": "laundry room",
    "utility room": "laundry room",
    "exercise room": "gym",
    "workout": "gym",
}


def _words(label: str) -> str:
    spaced = _CAMEL_BOUNDARY.sub(" ", label.strip())
    return _SEPARATORS.sub(" ", spaced).strip().lower()


def normalize_category(label: str) -> str:
    """Lower-case, space-separated object category from a source label."""
    return _words(label)


def normalize_room_type(label: str) -> str:
    """Canonical room type ("kitchen", "living room", "bedroom", "bathroom", "hallway", …)."""
    words = _words(label)
    return ROOM_TYPE_ALIASES.get(words, ROOM_TYPE_ALIASES.get(words.replace(" ", ""), words))
