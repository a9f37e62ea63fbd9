"""Blind probes of the leakage audit that go beyond one condition at a time.

* :class:`ComplementPrior` — the mirror of :class:`~condvln.synth.priors.FrequencyPrior`: it
  guesses, for each condition group, the truth train has *fewer* of; it wins exactly where
  a split leans the other way from train.
* :func:`pair_aware_leaves` — a reader that sees both members of a counterfactual pair in the
  evaluated split (same program but one condition, of opposite truth, so their gold branches
  differ) and guesses the two differing conditions jointly: ``(true, false)`` or ``(false,
  true)``, whichever train's frequencies make likelier; the shared conditions get the
  frequency guess. It finds siblings by their ``pair_id`` label, which is what a reader
  comparing instructions recovers; so it is an upper bound for such a reader.
* :class:`LearnedProbe` — scikit-learn models to the gold branch index, hyper-parameters chosen
  by scene-grouped cross-validation on train (:class:`~sklearn.model_selection.GroupKFold` over
  ``scene_id``): a logistic regression (:func:`one_vs_rest_logistic`) over the instruction's
  words and the program's scene-free structure (:func:`structure_features`, one-hot), and
  gradient boosting over the structure alone (native categorical splits, so it finds
  interactions; the words mostly repeat the structure's categories and rooms, and thousands of
  one-hot word columns make boosting a hundred times slower).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.feature_extraction import DictVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold
from sklearn.multiclass import OneVsRestClassifier
from threadpoolctl import threadpool_limits

from condvln.program.ast import (
    Condition,
    Exists,
    If,
    Program,
    Step,
    iter_ifs,
    leaf_paths,
    program_from_dict,
)
from condvln.synth.priors import ConditionPrior, FrequencyPrior, predicted_leaf

Episode = Mapping[str, Any]

_WORD = re.compile(r"[a-z]+")


def one_vs_rest_logistic(**params: Any) -> OneVsRestClassifier:
    """L2 logistic regression, one branch against the rest, fitted by liblinear (its own
    trust-region Newton method, no BLAS): the fit is the same on every machine, where lbfgs's
    moved with the BLAS kernel (``OPENBLAS_CORETYPE``): up to 4.9 pp on one dataset."""
    return OneVsRestClassifier(LogisticRegression(solver="liblinear", **params))


MODELS: dict[str, tuple[Callable[..., Any], dict[str, Any], tuple[dict[str, Any], ...]]] = {
    "logistic": (
        one_vs_rest_logistic,
        {"max_iter": 1000},
        tuple({"C": c} for c in (0.01, 0.1, 1.0, 10.0)),
    ),
    "boosting": (
        HistGradientBoostingClassifier,
        {"max_iter": 100, "random_state": 0},
        tuple(
            {"max_depth": d, "learning_rate": r, "min_samples_leaf": 10}
            for d in (2, 4)
            for r in (0.05, 0.2)
        ),
    ),
}
"""Probe name → (estimator, fixed settings, the hyper-parameter grid, most regularised
first)."""

FOLDS = 5
"""Scene-grouped cross-validation folds (fewer when train has fewer scenes)."""


def info(episode: Episode) -> Mapping[str, Any]:
    """The episode's CondVLN labels (``info.condvln``)."""
    return episode["info"]["condvln"]  # type: ignore[no-any-return]


class ComplementPrior:
    """Guesses the truth its training frequencies make *less* likely, per condition group.

    >>> prior = ComplementPrior([(Exists("sofa", "living room"), True)] * 3)
    >>> round(prior.probability(Exists("sofa", "living room")), 2)
    0.2
    """

    def __init__(self, labelled: Sequence[tuple[Condition, bool]]) -> None:
        self.frequency = FrequencyPrior(labelled)

    def probability(self, condition: Condition) -> float:
        """One minus the smoothed training frequency (see :class:`FrequencyPrior`)."""
        return 1.0 - self.frequency.probability(condition)


class _Override:
    """A prior with some conditions' truths fixed."""

    def __init__(self, base: ConditionPrior, fixed: Mapping[Condition, bool]) -> None:
        self.base, self.fixed = base, fixed

    def probability(self, condition: Condition) -> float:
        if condition in self.fixed:
            return 1.0 if self.fixed[condition] else 0.0
        return self.base.probability(condition)


def _sibling_leaves(a: Program, b: Program, prior: ConditionPrior) -> tuple[int, int] | None:
    """The two members' guessed leaves, or ``None`` unless they differ in exactly one slot."""
    ca = [node.condition for node in iter_ifs(a.steps)]
    cb = [node.condition for node in iter_ifs(b.steps)]
    slots = [i for i, (x, y) in enumerate(zip(ca, cb, strict=False)) if x != y]
    if len(ca) != len(cb) or len(slots) != 1:
        return None
    x, y = ca[slots[0]], cb[slots[0]]
    px, py = prior.probability(x), prior.probability(y)
    x_true = px * (1.0 - py) >= (1.0 - px) * py
    return (
        predicted_leaf(a, _Override(prior, {x: x_true})),
        predicted_leaf(b, _Override(prior, {y: not x_true})),
    )


def pair_aware_leaves(
    episodes: Sequence[Episode], prior: ConditionPrior
) -> tuple[list[int], list[int]]:
    """``(rows, leaves)``: the indices of ``episodes`` whose sibling is in ``episodes`` too and
    the leaf the pair-aware reader guesses for each (members of other pairs are left out)."""
    members: dict[str, list[int]] = defaultdict(list)
    for row, episode in enumerate(episodes):
        if info(episode).get("pair_id"):
            members[str(info(episode)["pair_id"])].append(row)
    rows: list[int] = []
    leaves: list[int] = []
    for pair in sorted(members):
        if len(members[pair]) != 2:
            continue
        i, j = members[pair]
        a, b = (program_from_dict(info(episodes[k])["program"]) for k in (i, j))
        guessed = _sibling_leaves(a, b, prior)
        if guessed is None:
            guessed = (predicted_leaf(a, prior), predicted_leaf(b, prior))
        rows += [i, j]
        leaves += list(guessed)
    return rows, leaves


def _condition_features(prefix: str, condition: Condition) -> dict[str, Any]:
    if isinstance(condition, Exists):
        return {
            f"{prefix}type": "exists",
            f"{prefix}subject": condition.category,
            f"{prefix}room": condition.room,
        }
    return {
        f"{prefix}type": condition.predicate,
        f"{prefix}subject": condition.subject.category,
        f"{prefix}target": condition.target.category,
        f"{prefix}subject_room": str(condition.subject.room),
        f"{prefix}target_room": str(condition.target.room),
        f"{prefix}qualified": condition.subject.relation is not None,
    }


def _nesting(steps: tuple[Step, ...], level: int, out: list[int]) -> None:
    """Append each :class:`If`'s nesting level in :func:`iter_ifs` order."""
    for step in steps:
        if isinstance(step, If):
            out.append(level)
            _nesting(step.then, level + 1, out)
            _nesting(step.orelse, level + 1, out)


def structure_features(episode: Episode) -> dict[str, Any]:
    """What the instruction says, without the scene: the category, depth, chain, branch count,
    the steps before the first decision, each conditional's condition (type / predicate,
    categories, rooms) with its pre-order position and nesting level, and each branch's arm
    length (navigation steps on that path) and goal category."""
    labels = info(episode)
    program = program_from_dict(labels["program"])
    features: dict[str, Any] = {
        "category": labels["category"],
        "depth": program.depth,
        "chain": program.chain,
        "branches": labels["n_branches"],
        "prefix_steps": next(
            (i for i, s in enumerate(program.steps) if isinstance(s, If)), len(program.steps)
        ),
    }
    levels: list[int] = []
    _nesting(program.steps, 0, levels)
    for k, node in enumerate(iter_ifs(program.steps)):
        features |= _condition_features(f"if{k}_", node.condition)
        features[f"if{k}_level"] = levels[k]
    for k, (_, goes) in enumerate(leaf_paths(program.steps)):
        features[f"arm{k}_length"] = len(goes)
        features[f"arm{k}_goal"] = goes[-1].target.category
    return features


def episode_features(episode: Episode) -> dict[str, Any]:
    """:func:`structure_features` plus the instruction's words (presence)."""
    text = episode["instruction"]["instruction_text"].lower()
    return structure_features(episode) | {f"word={w}": 1 for w in set(_WORD.findall(text))}


class LearnedProbe:
    """A scikit-learn classifier from :func:`episode_features` to the gold branch index.

    Predictions are limited to each episode's own branches. The hyper-parameters are the
    :data:`MODELS` grid point with the best scene-grouped cross-validated accuracy on train
    (ties: the more regularised); with fewer than two train scenes the first grid point is
    used. Fitting and predicting run on one thread: the models are small, and OpenMP threads
    on a busy machine are many times slower than one.

    Attributes:
        chosen: The hyper-parameters used.
    """

    @threadpool_limits.wrap(limits=1)
    def __init__(self, kind: str, train: Sequence[Episode]) -> None:
        estimator, fixed, grid = MODELS[kind]
        if kind == "logistic":
            # dense: liblinear refuses the vectorizer's sparse matrices (64-bit indices)
            self.encoder: DictVectorizer | StructureEncoder = DictVectorizer(sparse=False)
            x = self.encoder.fit_transform([episode_features(e) for e in train])
        else:
            self.encoder = StructureEncoder()
            x = self.encoder.fit_transform([structure_features(e) for e in train])
            fixed = fixed | {"categorical_features": self.encoder.categorical}
        y = np.array([info(e)["leaf_index"] for e in train])
        branches = np.array([info(e)["n_branches"] for e in train])
        scenes = np.array([str(e.get("scene_id")) for e in train])
        folds = min(FOLDS, len(set(scenes)))
        self.chosen = grid[0]
        if folds >= 2 and len(set(y)) > 1:
            scores = [
                _cv_hits(estimator(**fixed, **params), x, y, branches, scenes, folds)
                for params in grid
            ]
            self.chosen = grid[int(np.argmax(scores))]
        self.model = estimator(**fixed, **self.chosen) if len(set(y)) > 1 else None
        if self.model is not None:
            self.model.fit(x, y)
        self.constant = int(np.bincount(y).argmax()) if len(y) else 0

    @threadpool_limits.wrap(limits=1)
    def predict(self, episodes: Sequence[Episode]) -> list[int]:
        """The likeliest of each episode's branches."""
        if not episodes:
            return []
        branches = np.array([info(e)["n_branches"] for e in episodes])
        if self.model is None:
            return [min(self.constant, b - 1) for b in branches]
        if isinstance(self.encoder, StructureEncoder):
            x = self.encoder.transform([structure_features(e) for e in episodes])
        else:
            x = self.encoder.transform([episode_features(e) for e in episodes])
        return _masked_argmax(self.model, x, branches).tolist()


class StructureEncoder:
    """Feature dicts → a float matrix for gradient boosting: numeric values as they are (a
    missing key is -1: the features count or index things, so they are never negative), text
    values as category codes learnt on the training dicts (a missing key is a category of its
    own; a value unseen in training is NaN, which the model treats as missing). Training rows
    hold no NaN: scikit-learn's binning fails on a column that is all NaN in a fold.

    >>> encoder = StructureEncoder()
    >>> encoder.fit_transform([{"a": "x", "n": 2}, {"n": 1}]).tolist()
    [[0.0, 2.0], [1.0, 1.0]]
    >>> encoder.categorical, encoder.transform([{"a": "z"}]).tolist()
    ([True, False], [[nan, -1.0]])
    """

    MAX_CATEGORIES = 250
    """This many distinct values or more (with the missing code, near the model's bin limit)
    are coded but split as numbers."""

    def fit_transform(self, rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """Learn the columns and category codes of ``rows``, then :meth:`transform` them."""
        keys = sorted({k for row in rows for k in row})
        self.codes: dict[str, dict[str, int] | None] = {}
        for key in keys:
            values = {row[key] for row in rows if key in row}
            text = any(isinstance(v, str) for v in values)
            self.codes[key] = (
                {v: i for i, v in enumerate(sorted(map(str, values)))} if text else None
            )
        self.categorical = [
            codes is not None and len(codes) < self.MAX_CATEGORIES for codes in self.codes.values()
        ]
        return self.transform(rows)

    def transform(self, rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """One row per dict, one column per learnt key."""
        out = np.full((len(rows), len(self.codes)), np.nan)
        for r, row in enumerate(rows):
            for c, (key, codes) in enumerate(self.codes.items()):
                if key not in row:
                    out[r, c] = -1.0 if codes is None else len(codes)
                    continue
                value = row[key] if codes is None else codes.get(str(row[key]))
                out[r, c] = np.nan if value is None else float(value)
        return out


def _masked_argmax(model: Any, x: Any, branches: np.ndarray) -> np.ndarray:
    """The class of highest probability among ``0 .. branches - 1`` of each row."""
    proba = model.predict_proba(x)
    classes = np.asarray(model.classes_)
    allowed = classes[None, :] < branches[:, None]
    proba = np.where(allowed, proba, -1.0)
    best = classes[np.argmax(proba, axis=1)]
    return np.where(allowed.any(axis=1), best, 0)


def _cv_hits(
    model: Any, x: Any, y: np.ndarray, branches: np.ndarray, scenes: np.ndarray, folds: int
) -> int:
    """Held-out hits over scene-grouped folds."""
    hits = 0
    for fit_rows, held in GroupKFold(n_splits=folds).split(x, y, groups=scenes):
        if len(set(y[fit_rows])) < 2:
            hits += int(np.sum(y[held] == np.bincount(y[fit_rows]).argmax()))
            continue
        model.fit(x[fit_rows], y[fit_rows])
        hits += int(np.sum(_masked_argmax(model, x[held], branches[held]) == y[held]))
    return hits


__all__ = [
    "MODELS",
    "ComplementPrior",
    "LearnedProbe",
    "StructureEncoder",
    "episode_features",
    "info",
    "one_vs_rest_logistic",
    "pair_aware_leaves",
    "structure_features",
]
