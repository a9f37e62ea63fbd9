"""Command-line options checked up front: pydantic range errors become one-line ConfigErrors.

>>> from pydantic import BaseModel, Field
>>> class Demo(BaseModel):
...     per_scene: int = Field(1, ge=1)
>>> build(Demo, per_scene=0)
Traceback (most recent call last):
...
condvln.errors.ConfigError: --per-scene: must be ≥ 1, got 0
"""

from __future__ import annotations

from typing import Any, TypeVar

import pydantic

from condvln.errors import ConfigError

M = TypeVar("M", bound=pydantic.BaseModel)

_MESSAGES = {
    "greater_than_equal": "must be ≥ {ge}",
    "greater_than": "must be > {gt}",
    "less_than_equal": "must be ≤ {le}",
    "less_than": "must be < {lt}",
}


def option_name(field: str) -> str:
    """The command-line spelling of a config field (``per_scene`` → ``--per-scene``)."""
    return "--" + field.replace("_", "-")


def config_error(exc: pydantic.ValidationError) -> ConfigError:
    """The first problem of a pydantic error as a one-line :class:`ConfigError`."""
    error = exc.errors()[0]
    field = ".".join(str(p) for p in error.get("loc", ())) or "value"
    template = _MESSAGES.get(error.get("type", ""))
    reason = template.format(**error.get("ctx", {})) if template else error.get("msg", "invalid")
    return ConfigError(f"{option_name(field)}: {reason}, got {error.get('input')!r}"[:300])


def build(model: type[M], base: M | None = None, **values: Any) -> M:
    """``model(**values)`` (over the fields of ``base``), validated, or a :class:`ConfigError`."""
    data = base.model_dump() if base is not None else {}
    data |= values
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        raise config_error(exc) from None
