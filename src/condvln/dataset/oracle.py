"""The paper's oracle-linear transformation (§4) as a dataset-to-dataset command.

Only the agent-facing instruction changes: its text becomes the recorded oracle-linear
instruction ("go to g" / "first go to g1, then …, and finally go to g") and its tokens are
re-encoded with the unchanged vocabulary (generation puts the oracle words in it). Goals,
subgoals, reference paths, ground truth, scenes and every other byte stay the same, so
differences between the two datasets isolate branch selection.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from condvln.dataset.vlnce import available_splits, dump_gz, encode, load_split, split_path
from condvln.errors import ConfigError, FormatError, ValidationError
from condvln.io import atomic_directory, read_json


def _oracle_texts(root: Path, split: str, episodes: list[dict]) -> dict[str, str]:
    """Episode id → oracle instruction (test episodes keep theirs in the answers file)."""
    if split == "test":
        answers = read_json(split_path(root, split, "_answers"), FormatError)
        return {k: v["info"]["condvln"]["oracle_instruction"] for k, v in answers.items()}
    return {str(e["episode_id"]): e["info"]["condvln"]["oracle_instruction"] for e in episodes}


def oracle_transform(source: str | Path, out: str | Path, *, overwrite: bool = False) -> int:
    """Write the oracle-linear version of the dataset at ``source`` to ``out``.

    Returns:
        The number of episodes rewritten.
    """
    source, out = Path(source), Path(out)
    if out.exists() and not overwrite:
        raise ConfigError(f"{out} exists; pass --overwrite to replace it")
    splits = available_splits(source)
    if not splits:
        raise FormatError("no split files found", file=str(source))
    count = 0
    with atomic_directory(out, replace=True) as tmp:
        shutil.copytree(source, tmp, dirs_exist_ok=True)
        for split in splits:
            doc = load_split(source, split)
            index = {w: i for i, w in enumerate(doc["instruction_vocab"]["word_list"])}
            texts = _oracle_texts(source, split, doc["episodes"])
            for episode in doc["episodes"]:
                text = texts.get(str(episode["episode_id"]))
                if text is None:
                    raise ValidationError(
                        f"{split}: episode {episode['episode_id']}: no oracle instruction"
                    )
                episode["instruction"]["instruction_text"] = text
                episode["instruction"]["instruction_tokens"] = encode(text, index)
                count += 1
            dump_gz(split_path(tmp, split), doc)
        marker = {"transform": "oracle-linear", "source": str(source)}
        (tmp / "oracle.json").write_bytes(orjson.dumps(marker))
    return count
