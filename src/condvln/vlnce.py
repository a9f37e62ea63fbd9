"""VLN-CE split files: ``{split}/{split}.json.gz``, ``{split}_gt.json.gz``, vocabulary, tokens.

Layout of a dataset folder (what ``condvln generate`` writes)::

    README.md, stats.json              dataset card
    scenes/<scene>.json                the scenes (CondVLN scene JSON), named by episodes' scene_id
    train/train.json.gz                {"episodes": [...], "instruction_vocab": {"word_list": [...]}}
    train/train_gt.json.gz             {"<episode_id>": {"locations", "actions", "forward_steps"}}
    val_seen/…, val_unseen/…           as train
    test/test.json.gz                  episodes without info, goals and reference_path empty lists
    test/test_answers.json.gz          {"<episode_id>": {"goals", "reference_path", "info"}}

Files are gzip-compressed UTF-8 JSON written with a zero timestamp, so the same content always
gives the same bytes. The format sits below everything that writes or reads it — the dataset
generator, the habitat-sim configs and navmeshes, the runner, the evaluator — so none of them
imports another to find a split file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from condvln.errors import FormatError
from condvln.io import atomic_gzip_writer, read_json, resolve_path
from condvln.program.parse import tokenize

SPLITS = ("train", "val_seen", "val_unseen", "test", "pairs")
"""Dataset splits. ``pairs`` is the diagnostic split of counterfactual minimal pairs (both
members; scored per pair), so no other evaluation split holds a pair; datasets written before
it existed, or by other tools, may lack it (:data:`OPTIONAL_SPLITS`)."""

OPTIONAL_SPLITS = ("pairs",)
"""Splits a dataset folder may lack (readers treat a missing one as empty)."""


def present_splits(root: Path) -> list[str]:
    """The splits of dataset folder ``root`` to read: every one but an optional split whose
    folder is absent (a dangling link counts as present, so reading it reports the problem)."""
    return [s for s in SPLITS if s not in OPTIONAL_SPLITS or os.path.lexists(Path(root) / s)]


SPECIAL_WORDS = ("<pad>", "<unk>", "<s>", "</s>")
UNK_INDEX = 1


def build_vocab(texts: Iterable[str]) -> list[str]:
    """VLN-CE word list: the special words, then every token of ``texts`` sorted.

    >>> build_vocab(["Go to the bed.", "Walk to the sofa"])
    ['<pad>', '<unk>', '<s>', '</s>', '.', 'bed', 'go', 'sofa', 'the', 'to', 'walk']
    """
    words = {token for text in texts for token in tokenize(text)}
    return [*SPECIAL_WORDS, *sorted(words - set(SPECIAL_WORDS))]


def encode(text: str, index: dict[str, int]) -> list[int]:
    """Token indices of ``text`` (unknown words → ``<unk>``)."""
    return [index.get(token, UNK_INDEX) for token in tokenize(text)]


def dump_gz(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as gzip-compressed JSON atomically and deterministically."""
    with atomic_gzip_writer(path) as write:
        write(orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY))


def split_path(root: str | os.PathLike[str], split: str, suffix: str = "") -> Path:
    """``root/{split}/{split}{suffix}.json.gz``."""
    return Path(root) / split / f"{split}{suffix}.json.gz"


def load_split(root: str | os.PathLike[str], split: str) -> dict[str, Any]:
    """Read a split file; a missing or malformed file raises :class:`FormatError`."""
    path = split_path(root, split)
    doc = read_json(path, FormatError)
    if not isinstance(doc, dict) or not isinstance(doc.get("episodes"), list):
        raise FormatError("must be an object with an 'episodes' list", file=str(path))
    vocab = doc.get("instruction_vocab")
    if not isinstance(vocab, dict) or not isinstance(vocab.get("word_list"), list):
        raise FormatError("missing", file=str(path), record="instruction_vocab", field="word_list")
    return doc


def available_splits(root: str | os.PathLike[str]) -> list[str]:
    """The splits present in a dataset folder, in canonical order."""
    return [s for s in SPLITS if split_path(root, s).is_file()]


SCENE_INDEX = "scenes/index.json"
"""Dataset file mapping each episode ``scene_id`` to its CondVLN scene JSON (dataset-relative)."""


def load_scene_index(root: str | os.PathLike[str]) -> dict[str, str]:
    """The ``scene_id`` → scene JSON map of a dataset (empty for datasets written before it)."""
    path = Path(root) / SCENE_INDEX
    if not path.is_file():
        return {}
    index = read_json(path, FormatError)
    if not isinstance(index, dict) or not all(isinstance(v, str) for v in index.values()):
        raise FormatError("must map scene ids to scene files", file=str(path))
    return index


def scene_relative(episode: Mapping[str, Any], index: Mapping[str, str]) -> str:
    """The dataset-relative scene JSON ``episode`` names (unchecked; see
    :func:`scene_json_path`): episodes naming the same one share its checked path."""
    info = episode.get("info")
    condvln = info.get("condvln") if isinstance(info, Mapping) else None
    relative = condvln.get("scene_file") if isinstance(condvln, Mapping) else None
    if not isinstance(relative, str):
        scene_id = str(episode.get("scene_id"))
        relative = index.get(scene_id, scene_id)
    return relative


def scene_json_path(
    root: str | os.PathLike[str], episode: dict[str, Any], index: dict[str, str]
) -> Path:
    """The CondVLN scene JSON of ``episode``: ``info.condvln.scene_file``, else the index entry
    of its ``scene_id``, else ``scene_id`` itself (datasets written before habitat scene ids).

    Raises:
        FormatError: When the path leaves the dataset folder.
    """
    relative = scene_relative(episode, index)
    where = {"record": f"episode {episode.get('episode_id')}", "field": "info.condvln.scene_file"}
    base = resolve_path(Path(root), **where)
    path = resolve_path(base / relative, **where)
    if not path.is_relative_to(base):
        raise FormatError(
            "scene file is outside the dataset folder",
            record=f"episode {episode.get('episode_id')}",
            field="info.condvln.scene_file",
        )
    return path
