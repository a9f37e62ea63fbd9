"""Configuration files and dotted ``key=value`` overrides for the commands.

Each configurable command has one settings model whose fields are the library's own models
(:class:`~condvln.dataset.generate.GenerateConfig`, :class:`~condvln.graph.RelationConfig`,
:class:`~condvln.sim.protocol.ObservationProtocol`,
:class:`~condvln.evaluation.metrics.MetricOptions`) — ``condvln run`` uses the runner's own
:class:`~condvln.agents.runner.options.RunOptions` whole — so a field added to one of them is a
configuration key at once: in files, in overrides, in ``condvln config`` and in the errors.

A command's settings model also holds its other options (:class:`Execution`: the agent, the
dataset and output folders, the executor and workers, …), so a ``--config`` file can hold the
whole command; the command strips them before it builds the library's model.

Layers, later ones winning: the model defaults, a ``base`` (e.g. the benchmark's small dataset),
the ``--config`` file (YAML or JSON), the command's explicit options, then the dotted overrides
(OmegaConf's dotlist syntax: ``relations.near_holds=0.4``, ``inputs=[a.json,b.json]``,
``scenes=null``; interpolations like ``${seed}`` resolve) with Hydra's prefixes:
``+key=value`` adds a key that is not there yet (an agent argument), ``++key=value`` adds or
overrides, ``~key`` (or ``~key=value``, when it has that value) deletes one — back to the
default for a settings key. OmegaConf reads and merges; pydantic validates. Unknown keys and bad
values raise one-line :class:`~condvln.errors.ConfigError` s naming the key and what it accepts.

>>> resolve(RunSettings, overrides=["+agent_args.patience=40", "~seed"]).agent_args
{'patience': 40}
>>> resolve(RunSettings, overrides=["+seed=3"])
Traceback (most recent call last):
...
condvln.errors.ConfigError: config: +seed=3: 'seed' is already set; override it with seed=3 (or ++seed=3)

>>> resolve(GenerateConfig, overrides=["relations.near_holds=0.4", "per_scene=40"]).per_scene
40
>>> resolve(GenerateConfig, overrides=["relations.near_hold=0.4"])
Traceback (most recent call last):
...
condvln.errors.ConfigError: config: unknown key 'relations.near_hold'; did you mean 'relations.near_holds'? (allowed: version, near_holds, near_fails, far_fails, far_holds, higher_fails, higher_holds, overlap_fails, overlap_holds, stack_horizontal_holds, stack_horizontal_fails, level_angle, min_horizontal)
>>> resolve(GenerateConfig, overrides=["val_seen_share=1.5"])
Traceback (most recent call last):
...
condvln.errors.ConfigError: config: val_seen_share=1.5: Input should be less than 1 (allowed: a number ≥ 0 and < 1)
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import pydantic
import yaml
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException
from pydantic import BaseModel, ConfigDict, Field

from condvln.agents.runner.options import RunOptions
from condvln.benchmark import ITHOR_SMALL, SMALL
from condvln.dataset.generate import GenerateConfig
from condvln.errors import ConfigError, FormatError
from condvln.evaluation.metrics import MetricOptions
from condvln.io import read_bytes
from condvln.sim.protocol import ObservationProtocol

M = TypeVar("M", bound=BaseModel)

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class Execution(BaseModel):
    """Where a command's work runs, and what it does when episodes fail: the keys that every
    parallel command's settings share (paths are relative to the current folder).

    Attributes:
        executor: ``local`` (processes) or ``ray``.
        workers: Worker processes or Ray workers (``null``: all cores).
        ray_address: Ray cluster to join (``null``: a private local one).
        out: The output folder.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    executor: Literal["local", "ray"] = "local"
    workers: int | None = Field(None, ge=1, le=1024)
    ray_address: str | None = None
    out: str | None = None


class AgentExecution(Execution):
    """:class:`Execution` of the commands that run agents.

    Attributes:
        agent_resources: Ray options of each agent actor (``{num_gpus: 1}``).
        allow_failures: Exit 0 even when episodes failed (otherwise 3).
    """

    agent_resources: dict[str, Any] = {}
    allow_failures: bool = False


class RunSettings(AgentExecution, RunOptions):
    """Settings of ``condvln run``: the runner's :class:`RunOptions` and the command's options.

    Attributes:
        agent: The agent spec (name, ``module:Class``, ``file.py:Class`` or URL).
        dataset: The dataset folder.
        shard: ``i/N``: run only that shard of the split.
    """

    agent: str | None = None
    dataset: str | None = None
    shard: str | None = None


class GenerateSettings(Execution, GenerateConfig):
    """Settings of ``condvln generate``: the dataset's :class:`GenerateConfig` and the
    command's options (never part of the dataset's configuration or hash).

    Attributes:
        overwrite: Replace an existing dataset folder.
    """

    overwrite: bool = False


class EvaluateSettings(Execution):
    """Settings of ``condvln evaluate``.

    Attributes:
        dataset: The dataset folder.
        predictions: A predictions file or a run folder.
        split: Split to score (``null``: the run manifest's, else inferred from the ids).
        name: Run name in the tables (``null``: the run's agent name, else the file's name).
        seed: Seed of the bootstrap intervals.
        metrics: Metric conventions and thresholds (nDTW / CLS ``d_th``, strictness, …).
        shard: ``i/N``: score only that shard of the split.
        allow_failures: Exit 0 even when the run's episodes failed (otherwise 3).
        workers: Worker processes (scenes in parallel; ``null``: one).
    """

    dataset: str | None = None
    predictions: str | None = None
    split: str | None = None
    name: str | None = None
    seed: int = Field(0, ge=0)
    metrics: MetricOptions = MetricOptions()
    shard: str | None = None
    allow_failures: bool = False


def library_part(settings: BaseModel, model: type[M]) -> M:
    """The library's own model (``RunOptions``, ``GenerateConfig``) out of a command's settings.

    >>> library_part(RunSettings(agent="random", limit=2), RunOptions).limit
    2
    """
    return model.model_validate(settings.model_dump(include=set(model.model_fields)))


class NoiseSettings(BaseModel):
    """Perception noise of the benchmark's ``neurosymbolic+noise`` run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    miss_rate: float = Field(0.3, ge=0.0, le=1.0)
    confusion_rate: float = Field(0.1, ge=0.0, le=1.0)
    false_detection_rate: float = Field(0.05, ge=0.0, le=1.0)


class BenchmarkSettings(AgentExecution):
    """Settings of ``condvln benchmark``.

    Attributes:
        dataset: The generated dataset (default: 80 houses, 50 instructions each, half unseen;
            ``--full``: the paper-scale ``condvln generate`` defaults).
        ithor: The AI2-THOR group's dataset (default: the 120 iTHOR rooms, 20 instructions
            each, half unseen; ``--full``: 75 each, 30% unseen; ``null``: no such group).
        split: Split the agents are run and scored on.
        protocol: Observation protocol of every run (the noise run adds ``noise``).
        noise: Perception noise of the ``neurosymbolic+noise`` run.
        metrics: Metric conventions and thresholds.
        out: The results folder.
        full: Paper scale (the ``--full`` datasets and the pixel rows).
        pixels: Add the pixel-perception rows.
        agents: More agents, one row each (``--agent``).
        agent_args: Constructor arguments of those agents.
    """

    dataset: GenerateConfig = SMALL
    ithor: GenerateConfig | None = ITHOR_SMALL
    split: str = "val_unseen"
    protocol: ObservationProtocol = ObservationProtocol()
    noise: NoiseSettings = NoiseSettings()
    metrics: MetricOptions = MetricOptions()
    out: str | None = "results/benchmark"
    full: bool = False
    pixels: bool = False
    agents: list[str] = []
    agent_args: dict[str, Any] = {}


SETTINGS: dict[str, type[BaseModel]] = {
    "generate": GenerateSettings,
    "run": RunSettings,
    "evaluate": EvaluateSettings,
    "benchmark": BenchmarkSettings,
}
"""The settings model of each configurable command."""


def resolve(
    model: type[M],
    *,
    config_file: str | Path | None = None,
    overrides: Sequence[str] = (),
    options: Mapping[str, Any] | None = None,
    base: Mapping[str, Any] | None = None,
) -> M:
    """The effective settings of a command: defaults ← base ← file ← options ← overrides.

    Interpolations (``${seed}``) see every layer, the defaults included.

    Args:
        model: The command's settings model (see :data:`SETTINGS`).
        config_file: A YAML (``.yaml`` / ``.yml``) or JSON (``.json``) file of settings.
        overrides: ``key=value`` strings with dotted keys, or Hydra's ``+key=value`` (add),
            ``++key=value`` (add or override), ``~key`` / ``~key=value`` (delete).
        options: Values of the command's explicitly given options, by dotted key.
        base: Values replacing the model defaults (nested mapping or dotted keys).

    Raises:
        ConfigError: Unreadable file, malformed override, unknown key or invalid value.
    """
    layers = [model().model_dump(mode="json"), _nested(base or {}, "base")]
    if config_file is not None:
        layers.append(read_config_file(config_file))
    layers.append(_nested(options or {}, "option"))
    try:
        config = OmegaConf.merge(*layers)
        for item in overrides:
            config = _override(config, item)
        merged = OmegaConf.to_container(config, resolve=True)
    except (OmegaConfBaseException, yaml.YAMLError, ValueError) as exc:
        raise ConfigError(f"config: {_one_line(str(exc))}"[:300]) from None
    assert isinstance(merged, dict)
    schema = pydantic.TypeAdapter(model).json_schema()
    _check_keys(merged, schema, schema, ())
    try:
        return model.model_validate(merged)
    except pydantic.ValidationError as exc:
        raise ConfigError(_describe_error(exc, merged, schema)) from None
    except ConfigError as exc:  # raised by a dataclass's own checks (MetricOptions)
        raise ConfigError(f"config: {exc}") from None


CONFIG_MAX_BYTES = 4 << 20
"""Largest settings file read (a settings file is a few kB)."""

MAX_CONFIG_VALUES = 100_000
"""Most values a settings file may hold with its YAML aliases expanded (a billion laughs stops
here)."""

MAX_DIGITS = 19
"""Longest whole number a settings value may be written with (every setting fits in 64 bits)."""


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML or JSON settings file into a mapping, through the input layer.

    The file must be a regular file of at most :data:`CONFIG_MAX_BYTES` (a named pipe or a
    device is refused, never read). YAML is read as JSON-like data: aliases are expanded up to
    :data:`MAX_CONFIG_VALUES` values (never recursively), whole numbers have at most
    :data:`MAX_DIGITS` digits, dates stay text, and binary, set and ordered-map tags are refused.

    Raises:
        ConfigError: Missing or odd file, unknown suffix, a parse error (with its line) or a
            top level that is not a mapping.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".json"):
        raise ConfigError(f"{path}: config files are .yaml, .yml or .json")
    try:
        text = read_bytes(path, max_bytes=CONFIG_MAX_BYTES).decode("utf-8")
    except FormatError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.message}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    data = _load_json(text, path) if suffix == ".json" else load_yaml(text, str(path))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of settings")
    return data


def _bounded_int(text: str, where: str, line: int | None = None) -> int:
    if len(text.lstrip("+-").replace("_", "")) > MAX_DIGITS:
        at = f"line {line}: " if line is not None else ""
        raise ConfigError(f"{where}: {at}whole number of {len(text)} digits is too large")
    return int(text)


def _load_json(text: str, path: Path) -> Any:
    try:
        return json.loads(text, parse_int=lambda t: _bounded_int(t, str(path)))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: line {exc.lineno}: {exc.msg}") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply") from None


class _SettingsLoader(yaml.SafeLoader):
    """PyYAML's safe loader for settings: JSON-like values only (see :func:`load_yaml`)."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:  # type: ignore[override]
        digits = str(node.value).lstrip("+-").replace("_", "")
        if len(digits.removeprefix("0x").removeprefix("0o").removeprefix("0b")) > MAX_DIGITS:
            raise yaml.constructor.ConstructorError(
                None, None, f"whole number of {len(digits)} digits is too large", node.start_mark
            )
        return super().construct_yaml_int(node)

    def construct_text(self, node: yaml.ScalarNode) -> str:
        return str(node.value)

    def refuse(self, node: yaml.Node) -> None:
        kind = node.tag.rsplit(":", 1)[-1]
        raise yaml.constructor.ConstructorError(
            None, None, f"a YAML {kind} is not a setting value", node.start_mark
        )


_SettingsLoader.add_constructor("tag:yaml.org,2002:int", _SettingsLoader.construct_yaml_int)
_SettingsLoader.add_constructor("tag:yaml.org,2002:timestamp", _SettingsLoader.construct_text)
for _kind in ("binary", "set", "omap", "pairs"):
    _SettingsLoader.add_constructor(f"tag:yaml.org,2002:{_kind}", _SettingsLoader.refuse)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_expansion(root: yaml.Node, where: str) -> None:
    """Refuse a YAML node graph that aliases expand past :data:`MAX_CONFIG_VALUES` values, or
    that refers to itself (sizes are counted once per node: linear in the file)."""
    sizes: dict[int, int] = {}
    path: set[int] = set()  # the nodes being counted: the current one and its ancestors
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, counted = stack.pop()
        key = id(node)
        if counted:
            path.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in _children(node))
            if sizes[key] > MAX_CONFIG_VALUES:
                raise ConfigError(
                    f"{where}: YAML aliases expand to more than {MAX_CONFIG_VALUES} values"
                )
        elif key in path:
            raise ConfigError(
                f"{where}: line {node.start_mark.line + 1}: a YAML alias refers to itself"
            )
        elif key not in sizes:
            path.add(key)
            stack.append((node, True))
            stack.extend((c, False) for c in _children(node))


def load_yaml(text: str, where: str) -> Any:
    """JSON-like data of one YAML document (``where`` names it in errors).

    >>> load_yaml("{a: &x [1, 2], b: *x, day: 2024-05-01}", "demo")
    {'a': [1, 2], 'b': [1, 2], 'day': '2024-05-01'}
    >>> load_yaml("seed: " + "9" * 40, "demo")
    Traceback (most recent call last):
    ...
    condvln.errors.ConfigError: demo: line 1: whole number of 40 digits is too large

    Raises:
        ConfigError: a parse error or a refused value, naming the line.
    """
    loader = _SettingsLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node, where)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise ConfigError(f"{where}: {line}{problem}") from None
    except RecursionError:
        raise ConfigError(f"{where}: nested too deeply") from None
    finally:
        loader.dispose()


def defaults_yaml(model: type[BaseModel], settings: BaseModel | None = None) -> str:
    """The settings (default: the model defaults) as YAML, in field order."""
    values = (settings or model()).model_dump(mode="json")
    return yaml.safe_dump(values, sort_keys=False, allow_unicode=True)


# --- layers --------------------------------------------------------------------------------------


def _nested(values: Mapping[str, Any], what: str) -> dict[str, Any]:
    """A nested mapping from one whose keys may be dotted."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if not _KEY.match(key):
            raise ConfigError(f"config: bad {what} key {key!r}")
        *parents, leaf = key.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    return value


_ABSENT = object()


def _override(config: Any, item: str) -> Any:
    """``config`` with one override applied, Hydra's way (see the module notes).

    Raises:
        ConfigError: A malformed override, ``+`` on a key that is there, ``~`` on one that is
            not (or whose value differs from ``~key=value``'s).
    """
    prefix = next((p for p in ("~", "++", "+") if item.startswith(p)), "")
    key, sep, raw = item[len(prefix) :].partition("=")
    if not _KEY.match(key) or (not sep and prefix != "~"):
        raise ConfigError(
            f"config: override {item!r} is not key=value, +key=value, ++key=value or ~key "
            "(e.g. per_scene=40)"
        )
    if sep:
        load_yaml(raw, f"config: override {item[:80]!r}")  # refused values, as in files
    value = OmegaConf.from_dotlist([f"{key}={raw}"]) if sep else None
    current = OmegaConf.select(config, key, default=_ABSENT, throw_on_resolution_failure=False)
    if prefix == "+" and current is not _ABSENT:
        raise ConfigError(
            f"config: {item}: '{key}' is already set; override it with {key}={raw} "
            f"(or ++{key}={raw})"
        )
    if prefix != "~":
        return OmegaConf.merge(config, value)
    if current is _ABSENT:
        raise ConfigError(f"config: {item}: there is no key '{key}' to delete")
    if value is not None:
        wanted = OmegaConf.to_container(value, resolve=True)
        for part in key.split("."):
            wanted = wanted[part]  # type: ignore[index]
        have = OmegaConf.to_container(current) if OmegaConf.is_config(current) else current
        if have != wanted:
            raise ConfigError(f"config: {item}: '{key}' is {have!r}, not {wanted!r}")
    parent, _, leaf = key.rpartition(".")
    del (OmegaConf.select(config, parent) if parent else config)[leaf]
    return config


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --- checking keys and values against the model's JSON schema ------------------------------------


def _deref(node: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follow ``$ref`` and single-entry ``allOf`` to the schema of an object or value."""
    while True:
        if "$ref" in node:
            node = root["$defs"][node["$ref"].rsplit("/", 1)[-1]]
        elif len(node.get("allOf", ())) == 1:
            node = node["allOf"][0]
        else:
            return node


def _check_keys(
    data: Any, node: Mapping[str, Any], root: Mapping[str, Any], path: tuple[str, ...]
) -> None:
    node = _deref(node, root)
    properties = node.get("properties")
    if not isinstance(data, dict) or properties is None:
        return  # a scalar, or a free-form mapping (validated by pydantic)
    for key, value in data.items():
        if key not in properties:
            dotted = ".".join((*path, str(key)))
            close = difflib.get_close_matches(str(key), list(properties), n=1)
            hint = f"; did you mean '{'.'.join((*path, close[0]))}'?" if close else ""
            allowed = ", ".join(properties)
            raise ConfigError(f"config: unknown key '{dotted}'{hint} (allowed: {allowed})")
        _check_keys(value, properties[key], root, (*path, str(key)))


def _field_schema(root: Mapping[str, Any], loc: Sequence[Any]) -> Mapping[str, Any] | None:
    node: Mapping[str, Any] = root
    for part in loc:
        node = _deref(node, root)
        properties = node.get("properties") or {}
        if part not in properties:
            return None
        node = properties[part]
    return _deref(node, root)


def allowed_values(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> str:
    """A short description of what a JSON-schema node accepts ("a number > 0", "'a' or 'b'").

    >>> allowed_values({"type": "number", "exclusiveMinimum": 0, "maximum": 1})
    'a number > 0 and ≤ 1'
    >>> allowed_values({"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]})
    'an integer ≥ 1, or null'
    >>> allowed_values({"enum": ["all", "stop"], "type": "string"})
    "'all' or 'stop'"
    """
    root = root or schema
    schema = _deref(schema, root)
    if "anyOf" in schema:
        return ", or ".join(allowed_values(s, root) for s in schema["anyOf"])
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        return " or ".join(repr(v) for v in values)
    kind = schema.get("type")
    if kind in ("number", "integer"):
        bounds = [
            f"{op} {schema[key]:g}"
            for key, op in (
                ("exclusiveMinimum", ">"),
                ("minimum", "≥"),
                ("exclusiveMaximum", "<"),
                ("maximum", "≤"),
            )
            if key in schema
        ]
        noun = "a number" if kind == "number" else "an integer"
        return " and ".join([f"{noun} {bounds[0]}" if bounds else noun, *bounds[1:]])
    if kind == "array":
        items = schema.get("items")
        inner = allowed_values(items, root) if isinstance(items, dict) else "values"
        return f"a list of {inner.removeprefix('a ').removeprefix('an ')}s"
    if kind == "object":
        keys = ", ".join(schema.get("properties", {}))
        return f"a mapping of {keys}" if keys else "a mapping"
    return {"boolean": "true or false", "string": "a string", "null": "null"}.get(
        str(kind), str(kind)
    )


def _describe_error(
    exc: pydantic.ValidationError, data: Mapping[str, Any], root: Mapping[str, Any]
) -> str:
    err = exc.errors()[0]
    loc = [p for p in err["loc"] if not isinstance(p, int)]
    dotted = ".".join(str(p) for p in loc)
    msg = str(err["msg"]).removeprefix("Value error, ")
    field = _field_schema(root, loc) if loc else None
    value: Any = data
    for part in loc:
        value = value.get(part) if isinstance(value, dict) else None
    if field is None or "properties" in field:  # a whole-model check (e.g. threshold order)
        allowed = f" (allowed: {allowed_values(field, root)})" if "type" in err["type"] else ""
        return f"config: {dotted + ': ' if dotted else ''}{msg}{allowed}"
    shown = json.dumps(value) if not isinstance(value, str) else value
    return f"config: {dotted}={shown}: {msg} (allowed: {allowed_values(field, root)})"
