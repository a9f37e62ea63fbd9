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

from condvln.dataset.schema import load_checked_split
from condvln.errors import ConfigError, FormatError, ValidationError
from condvln.io import atomic_directory, check_regular_file, inside, output_path
from condvln.vlnce import dump_gz, encode, present_splits, split_path


def _copy_dataset(source: Path, dest: Path) -> None:
    """Copy the dataset's regular files; a symlink is followed only when it stays inside."""
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if path.is_symlink():
            inside(source, str(relative), record="dataset folder", field=str(relative))
        if path.is_dir():
            (dest / relative).mkdir(parents=True, exist_ok=True)
            continue
        check_regular_file(path)
        (dest / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest / relative)


def oracle_transform(source: str | Path, out: str | Path, *, overwrite: bool = False) -> int:
    """Write the oracle-linear version of the dataset at ``source`` to ``out``.

    Every split must pass the shared schema check (:mod:`condvln.dataset.schema`) first; the
    output folder is built aside and swapped in (an existing one is never lost).

    Returns:
        The number of episodes rewritten.
    """
    source, out = Path(source), output_path(out)
    if out.exists() and not overwrite:
        raise ConfigError(f"{out} exists; pass --overwrite to replace it")
    if source.resolve() in (out.resolve(), *out.resolve().parents):
        raise ConfigError(f"{out} is the source dataset or inside it; pick another folder")
    if not source.is_dir():
        raise FormatError("not a dataset folder", file=str(source))
    checked = {split: load_checked_split(source, split) for split in present_splits(source)}
    rewritten: dict[str, dict] = {}
    for split, data in checked.items():
        doc = data.doc
        index = {w: i for i, w in enumerate(doc["instruction_vocab"]["word_list"])}
        for episode, merged in zip(doc["episodes"], data.episodes, strict=True):
            text = merged["info"]["condvln"].get("oracle_instruction")
            if not isinstance(text, str) or not text:
                raise ValidationError(
                    f"{data.file}: episode {episode['episode_id']}: "
                    "field 'info.condvln.oracle_instruction': missing"
                )
            episode["instruction"]["instruction_text"] = text
            episode["instruction"]["instruction_tokens"] = encode(text, index)
        rewritten[split] = doc
    with atomic_directory(out, replace=overwrite) as tmp:
        _copy_dataset(source, tmp)
        for split, doc in rewritten.items():
            dump_gz(split_path(tmp, split), doc)
        marker = {"transform": "oracle-linear", "source": str(source)}
        (tmp / "oracle.json").write_bytes(orjson.dumps(marker))
    return sum(len(doc["episodes"]) for doc in rewritten.values())
