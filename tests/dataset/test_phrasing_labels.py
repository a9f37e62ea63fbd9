"""``phrasing_seen`` re-derived by ``condvln validate`` from the instruction text."""

from __future__ import annotations

from typing import Any

import pytest

from condvln.dataset.validate import _phrasing_problems
from condvln.program.parse import parse

SEEN = "If the kitchen has a mug, go to the sofa; otherwise, the bed."
HELD_OUT = "Provided that the kitchen holds a mug, get to the sofa; otherwise, the bed."
PROGRAM = parse(SEEN).to_dict()


def _episode(text: str, **labels: Any) -> dict[str, Any]:
    info = {"program": PROGRAM, **labels}
    return {"instruction": {"instruction_text": text}, "info": {"condvln": info}}


@pytest.mark.parametrize(
    ("text", "flag", "split", "problem"),
    [
        (SEEN, True, "train", None),
        (HELD_OUT, False, "val_unseen", None),
        (SEEN, False, "val_unseen", "is False, but the text reads back with the seen"),
        (HELD_OUT, True, "val_unseen", "is True, but the text does not read back with the seen"),
        (HELD_OUT, False, "train", "a held-out paraphrase in a seen house's split"),
        (HELD_OUT, False, "pairs", "a held-out paraphrase in a seen house's split"),
    ],
)
def test_phrasing_seen_is_rederived_from_the_text(
    text: str, flag: bool, split: str, problem: str | None
) -> None:
    assert parse(HELD_OUT).to_dict() == PROGRAM  # the same program, in held-out words
    found = _phrasing_problems(_episode(text, phrasing_seen=flag), None, split)
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and problem in found[0][1]


def test_test_split_labels_come_from_the_answers_and_old_datasets_pass() -> None:
    public = {"instruction": {"instruction_text": HELD_OUT}}
    answer = _episode(HELD_OUT, phrasing_seen=True)
    assert "does not read back" in _phrasing_problems(public, answer, "test")[0][1]
    assert _phrasing_problems(_episode(HELD_OUT), None, "train") == []  # no key: not checked
