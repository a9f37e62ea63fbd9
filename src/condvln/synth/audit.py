"""Leakage audit: can the gold branch be guessed from the instruction text alone?

Blind probes are trained on the train split and scored on an evaluation split (val_unseen by
default), never looking at a scene:

* ``text_prior`` — per-group truth frequencies from train (:class:`FrequencyPrior`), then the
  program is run on those guesses;
* ``commonsense_prior`` — the catalogue's world knowledge (:class:`CommonsensePrior`);
* ``bag_of_words`` — a multinomial logistic regression from the instruction's word counts to the
  gold branch index, one model per number of branches;
* ``complement`` — the truth train has *fewer* of, per group
  (:class:`~condvln.synth.probes.ComplementPrior`), then the program is run on those guesses;
* ``pair_aware`` — both members of each counterfactual pair in the evaluated split, guessed
  jointly (:func:`~condvln.synth.probes.pair_aware_leaves`; scored on pair members only);
* ``logistic_regression`` and ``gradient_boosting`` — scikit-learn models over the words and the
  program's scene-free structure, tuned by scene-grouped cross-validation on train
  (:class:`~condvln.synth.probes.LearnedProbe`);
* ``constant_branch`` (the best fixed branch index, chosen on train) and ``nearest_goal`` (the
  gold goal is the leaf goal nearest the start).

Each probe's branch accuracy is reported next to chance (the mean of ``1 / branches``) overall
and per Table-1 category, with n and a 95 % interval of accuracy − chance; the priors' accuracy
at predicting each evaluated condition's truth is reported per condition type next to 50 %.
:func:`violations` lists what is off chance beyond the tolerances in *either* direction: a probe
far below chance is a leak too, because its mirror image (the opposite guesses) is as far above.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# scipy's optimizer and tests and the probes (scikit-learn) are imported by the functions that
# use them: importing this module for its limits (the dataset card, in every generation worker)
# stays light.
import numpy as np

from condvln.program.ast import CATEGORIES, program_from_dict
from condvln.synth.priors import (
    CommonsensePrior,
    ConditionPrior,
    FrequencyPrior,
    condition_type,
    guess,
    labelled_conditions,
    predicted_leaf,
)

Episode = Mapping[str, Any]
PRIOR_PROBES = ("text_prior", "commonsense_prior", "complement")
LEARNED_PROBES = {"logistic_regression": "logistic", "gradient_boosting": "boosting"}
"""Report name → :data:`~condvln.synth.probes.MODELS` key."""
BRANCH_PROBES = (*PRIOR_PROBES, "bag_of_words", "pair_aware", *LEARNED_PROBES)
"""Probes judged overall and per category."""
SHORTCUT_PROBES = ("constant_branch", "nearest_goal")
"""Probes judged overall only, with the tighter shortcut tolerance."""
PROBES = (*BRANCH_PROBES, *SHORTCUT_PROBES)


@dataclass(frozen=True)
class Tolerances:
    """How far a blind probe may be from chance before the audit fails (percentage points).

    Attributes:
        overall: Branch accuracy over all episodes vs chance.
        category: Branch accuracy per Table-1 category vs its chance.
        condition: A prior's truth accuracy per condition type vs 50 %.
        shortcut: Constant-branch and nearest-goal accuracy vs chance.
        min_count: Cells with fewer episodes / conditions are reported but not judged.
        standard_errors: Every limit widens to this many standard errors of an accuracy at the
            cell's chance level, so that a small cell (or a small dataset's overall line) fails
            only when its deviation is more than sampling noise (0 keeps the fixed limits).
        cell_standard_errors: The widening of the per-category and per-condition-type cells
            (never below ``standard_errors``). A report judges 50–60 of them; at two
            standard errors each, a dataset without any leak would fail about 9 times in 10
            (were the cells independent), at three about once in 8 (Bonferroni over 50 cells
            at 5 % two-sided asks 3.3).
    """

    overall: float = 3.0
    category: float = 6.0
    condition: float = 6.0
    shortcut: float = 2.0
    min_count: int = 30
    standard_errors: float = 2.0
    cell_standard_errors: float = 3.0


_WORD = re.compile(r"[a-z]+")


L2_GRID = (1.0, 10.0, 100.0)
"""L2 strengths the bag-of-words probe chooses from by cross-validation on train."""

FOLDS = 5
"""Cross-validation folds (episodes dealt round-robin, so the choice is deterministic)."""


class BagOfWords:
    """Multinomial logistic regression (L2) from word presence to the gold branch, per branch
    count; the L2 strength is chosen per branch count by :data:`FOLDS`-fold cross-validation on
    train over :data:`L2_GRID` (unless ``l2`` is given), as a probe looking for a leak would be
    tuned — an over-fitted probe only adds noise.

    Attributes:
        chosen_l2: Branch count → the L2 strength used.
    """

    def __init__(self, train: Sequence[Episode], l2: float | None = None) -> None:
        words = sorted({w for e in train for w in _words(e)})
        self.index = {w: i for i, w in enumerate(words)}
        self.models: dict[int, np.ndarray] = {}
        self.chosen_l2: dict[int, float] = {}
        by_n: dict[int, list[Episode]] = defaultdict(list)
        for episode in train:
            by_n[_info(episode)["n_branches"]].append(episode)
        for n, items in sorted(by_n.items()):
            x = self._features(items)
            y = np.array([_info(e)["leaf_index"] for e in items])
            strength = l2 if l2 is not None else _cross_validated_l2(x, y, n)
            self.chosen_l2[n] = strength
            self.models[n] = _fit_softmax(x, y, n, strength)

    def _features(self, episodes: Sequence[Episode]) -> np.ndarray:
        x = np.zeros((len(episodes), len(self.index) + 1))
        x[:, -1] = 1.0  # bias
        for row, episode in enumerate(episodes):
            for word in _words(episode):
                if word in self.index:
                    x[row, self.index[word]] = 1.0
        return x

    def predict(self, episodes: Sequence[Episode]) -> list[int]:
        """The most probable branch of each episode (branch 0 for an unseen branch count)."""
        out = []
        for episode in episodes:
            weights = self.models.get(_info(episode)["n_branches"])
            if weights is None:
                out.append(0)
                continue
            scores = self._features([episode]) @ weights
            out.append(int(np.argmax(scores[0])))
        return out


def _cross_validated_l2(x: np.ndarray, y: np.ndarray, n: int) -> float:
    """The :data:`L2_GRID` strength with the best held-out accuracy (ties: the stronger)."""
    if len(y) < 2 * FOLDS:
        return L2_GRID[-1]
    fold = np.arange(len(y)) % FOLDS
    best, best_score = L2_GRID[-1], -1.0
    for strength in reversed(L2_GRID):
        hits = 0
        for k in range(FOLDS):
            w = _fit_softmax(x[fold != k], y[fold != k], n, strength)
            hits += int(np.sum(np.argmax(x[fold == k] @ w, axis=1) == y[fold == k]))
        if hits > best_score:
            best, best_score = strength, hits
    return best


def _fit_softmax(x: np.ndarray, y: np.ndarray, n: int, l2: float) -> np.ndarray:
    onehot = np.eye(n)[y]

    def loss(flat: np.ndarray) -> tuple[float, np.ndarray]:
        w = flat.reshape(x.shape[1], n)
        z = x @ w
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        value = -np.sum(onehot * np.log(p + 1e-12)) + 0.5 * l2 * np.sum(w[:-1] ** 2)
        grad = x.T @ (p - onehot)
        grad[:-1] += l2 * w[:-1]
        return float(value), grad.ravel()

    from scipy.optimize import minimize

    result = minimize(
        loss, np.zeros(x.shape[1] * n), jac=True, method="L-BFGS-B", options={"maxiter": 200}
    )
    return result.x.reshape(x.shape[1], n)


def _info(episode: Episode) -> Mapping[str, Any]:
    return episode["info"]["condvln"]  # type: ignore[no-any-return]


def _words(episode: Episode) -> list[str]:
    return _WORD.findall(episode["instruction"]["instruction_text"].lower())


def _cell(hits: Sequence[bool], chance: Sequence[float]) -> dict[str, Any]:
    """``n``, ``accuracy``, ``chance``, ``diff`` (accuracy − chance) and ``ci95``, all in
    percent: the Wilson score 95 % interval of the accuracy minus chance (chance is a mean of
    known ``1 / branches``, without sampling error); ``None`` values when ``n`` is 0."""
    n = len(hits)
    if not n:
        return {"n": 0, "accuracy": None, "chance": None, "diff": None, "ci95": None}
    from scipy.stats import binomtest

    accuracy, base = 100.0 * float(np.mean(hits)), 100.0 * float(np.mean(chance))
    interval = binomtest(int(np.sum(hits)), n).proportion_ci(0.95, method="wilson")
    return {
        "n": n,
        "accuracy": accuracy,
        "chance": base,
        "diff": accuracy - base,
        "ci95": [100.0 * float(interval.low) - base, 100.0 * float(interval.high) - base],
    }


def _branch_table(
    episodes: Sequence[Episode], predictions: Sequence[int]
) -> dict[str, dict[str, Any]]:
    hits = [p == _info(e)["leaf_index"] for e, p in zip(episodes, predictions, strict=True)]
    chance = [1.0 / _info(e)["n_branches"] for e in episodes]
    table = {"all": _cell(hits, chance)}
    for category in CATEGORIES.values():
        rows = [i for i, e in enumerate(episodes) if _info(e)["category"] == category]
        table[category] = _cell([hits[i] for i in rows], [chance[i] for i in rows])
    return table


def _condition_table(episodes: Sequence[Episode], prior: ConditionPrior) -> dict[str, Any]:
    by_type: dict[str, list[bool]] = defaultdict(list)
    truths: dict[str, list[bool]] = defaultdict(list)
    for condition, truth in labelled_conditions(episodes):
        by_type[condition_type(condition)].append(guess(prior, condition) == truth)
        truths[condition_type(condition)].append(truth)
    return {
        kind: {**_cell(by_type[kind], [0.5] * len(by_type[kind])), "true_share": float(np.mean(t))}
        for kind, t in sorted(truths.items())
    }


def leakage_audit(train: Sequence[Episode], evaluation: Sequence[Episode]) -> dict[str, Any]:
    """Train every blind probe on ``train`` and score it on ``evaluation`` (episode dicts).

    Returns:
        ``{"episodes", "train_episodes", "branch": {probe: {"all" | category: cell}},
        "conditions": {prior: {type: {..., "true_share"}}}, "hyperparameters": {learned
        probe: chosen}}``, a cell being ``{"n", "accuracy", "chance", "diff", "ci95"}`` in
        percent (:func:`_cell`); ``pair_aware`` counts only pair members whose sibling is in
        ``evaluation`` (n = 0 when none is).
    """
    from condvln.synth.probes import ComplementPrior, LearnedProbe, pair_aware_leaves

    labelled = labelled_conditions(train)
    priors: dict[str, ConditionPrior] = {
        "text_prior": FrequencyPrior(labelled),
        "commonsense_prior": CommonsensePrior(),
        "complement": ComplementPrior(labelled),
    }
    programs = [program_from_dict(_info(e)["program"]) for e in evaluation]
    branch = {
        name: _branch_table(evaluation, [predicted_leaf(p, prior) for p in programs])
        for name, prior in priors.items()
    }
    branch["bag_of_words"] = _branch_table(
        evaluation, BagOfWords(train).predict(evaluation) if train else [0] * len(evaluation)
    )
    rows, leaves = pair_aware_leaves(evaluation, priors["text_prior"])
    branch["pair_aware"] = _branch_table([evaluation[i] for i in rows], leaves)
    chosen = {}
    for name, kind in LEARNED_PROBES.items():
        probe = LearnedProbe(kind, train)
        branch[name] = _branch_table(evaluation, probe.predict(evaluation))
        chosen[name] = probe.chosen
    counts = np.bincount([_info(e)["leaf_index"] for e in train], minlength=4)
    constant = int(np.argmax(counts)) if train else 0
    branch["constant_branch"] = _branch_table(evaluation, [constant] * len(evaluation))
    nearest = [_info(e)["leaf_index"] if _info(e)["gold_is_nearest"] else -1 for e in evaluation]
    branch["nearest_goal"] = _branch_table(evaluation, nearest)
    return {
        "episodes": len(evaluation),
        "train_episodes": len(train),
        "branch": branch,
        "conditions": {name: _condition_table(evaluation, p) for name, p in priors.items()},
        "hyperparameters": chosen,
    }


def sampling_margin(n: int, chance: float, errors: float) -> float:
    """``errors`` standard errors (percentage points) of an accuracy over ``n`` items at
    ``chance`` percent.

    >>> round(sampling_margin(100, 50.0, 2.0), 1)
    10.0
    """
    p = chance / 100.0
    return 100.0 * errors * float(np.sqrt(p * (1.0 - p) / n))


def judgeable_count(tol: Tolerances | None = None, chance: float = 100.0 / 3) -> int:
    """Fewest evaluated episodes at which sampling noise (``tol.standard_errors`` standard
    errors of an accuracy at ``chance`` percent) fits inside the overall limit ``tol.overall``.

    Below it, :func:`violations` judges the overall lines by the wider noise margin, so a
    smaller dataset cannot be shown to meet the fixed limit even when nothing leaks.

    >>> judgeable_count()
    988
    """
    tol = tol or Tolerances()
    p = chance / 100.0
    return math.ceil(p * (1.0 - p) * (100.0 * tol.standard_errors / tol.overall) ** 2)


def violations(report: Mapping[str, Any], tol: Tolerances | None = None) -> list[str]:
    """One line per probe and cell whose accuracy is above *or below* chance (50 % for a
    condition's truth) by more than the tolerance; cells under ``min_count`` are not judged."""
    tol = tol or Tolerances()
    problems = []

    cells = max(tol.standard_errors, tol.cell_standard_errors)

    def check(
        label: str, cell: Mapping[str, Any], limit: float, reference: float | None, errors: float
    ) -> None:
        if cell["n"] < tol.min_count or cell["accuracy"] is None:
            return
        target = cell["chance"] if reference is None else reference
        limit = max(limit, sampling_margin(cell["n"], target, errors))
        gap = cell["accuracy"] - target
        if abs(gap) > limit:
            side = "above" if gap > 0 else "below"
            problems.append(
                f"{label}: {cell['accuracy']:.1f}% vs {target:.1f}%, {gap:+.1f} pp {side} "
                f"chance (n={cell['n']}, tolerance ±{limit:.1f} pp)"
            )

    for probe in BRANCH_PROBES:
        for key, cell in report["branch"][probe].items():
            if key == "all":
                check(f"{probe} all", cell, tol.overall, None, tol.standard_errors)
            else:
                check(f"{probe} {key}", cell, tol.category, None, cells)
    for probe in SHORTCUT_PROBES:
        check(
            f"{probe} all", report["branch"][probe]["all"], tol.shortcut, None, tol.standard_errors
        )
    for prior in PRIOR_PROBES:
        for kind, cell in report["conditions"][prior].items():
            check(f"{prior} truth of {kind}", cell, tol.condition, 50.0, cells)
    return problems
