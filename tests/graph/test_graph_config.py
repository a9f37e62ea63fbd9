"""The relation configuration: defaults, validation, canonical JSON and hash."""

from __future__ import annotations

import pydantic
import pytest

from condvln.errors import ConfigError
from condvln.graph import CONFIG_VERSION, RelationConfig, parse_config


def test_documented_defaults():
    cfg = RelationConfig()
    assert cfg.model_dump() == {
        "version": CONFIG_VERSION,
        "near_holds": 0.5,
        "near_fails": 1.0,
        "far_fails": 2.0,
        "far_holds": 3.0,
        "higher_fails": 0.1,
        "higher_holds": 0.3,
        "overlap_fails": 0.1,
        "overlap_holds": 0.5,
        "stack_horizontal_holds": 0.2,
        "stack_horizontal_fails": 0.5,
        "level_angle": 30.0,
        "min_horizontal": 0.01,
    }


def test_hash_is_stable_and_16_hex_digits():
    # Pinned: the hash of the defaults changes only when a default or the version changes.
    assert RelationConfig().config_hash == "41210d76edeaf450"
    assert RelationConfig().config_hash == parse_config({}).config_hash


def test_hash_changes_with_any_threshold():
    hashes = {
        RelationConfig().config_hash,
        RelationConfig(near_holds=0.4).config_hash,
        RelationConfig(level_angle=20.0).config_hash,
    }
    assert len(hashes) == 3


def test_canonical_json_has_sorted_keys():
    text = RelationConfig().canonical_json().decode()
    assert text.startswith('{"far_fails":2.0,"far_holds":3.0,')
    assert text.endswith('"version":1}')


def test_config_is_frozen():
    cfg = RelationConfig()
    with pytest.raises(pydantic.ValidationError):
        cfg.near_holds = 0.1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"near_holds": 1.0}, "near needs near_holds < near_fails (got 1.0 and 1.0)"),
        ({"near_fails": 2.5}, "near/far needs near_fails <= far_fails (got 2.5 and 2.0)"),
        ({"far_holds": 2.0}, "far from needs far_fails < far_holds (got 2.0 and 2.0)"),
        ({"higher_fails": 0.3}, "higher than needs higher_fails < higher_holds"),
        ({"overlap_holds": 0.05}, "above needs overlap_fails < overlap_holds"),
        ({"stack_horizontal_fails": 0.1}, "above needs stack_horizontal_holds <"),
        ({"level_angle": 90.0}, "level_angle: Input should be less than 90"),
        ({"near_holds": -1.0}, "near_holds: Input should be greater than 0"),
        ({"nera_holds": 0.4}, "nera_holds: Extra inputs are not permitted"),
        ({"version": 2}, "version must be 1, got 2"),
    ],
)
def test_inconsistent_configs_give_one_line_config_errors(data, message):
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    text = str(info.value)
    assert text.startswith("invalid relation config: ")
    assert message in text
    assert "\n" not in text


def test_parse_config_round_trips_a_dump():
    cfg = RelationConfig(near_holds=0.3, far_holds=4.0)
    assert parse_config(cfg.model_dump(mode="json")) == cfg
