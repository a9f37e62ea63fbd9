"""Per-scene synthesis: scene → graph + navigator → balanced-leaf instances and minimal pairs.

:func:`synthesize` is a pure function of (scene, seed, settings), so scenes can run in any
process in any order and the dataset stays byte-identical.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass

import numpy as np

from condvln.graph import RelationConfig, SceneGraph, build_scene_graph
from condvln.nav import ExactNavigator, GridConfig, GridNavigator
from condvln.scene.model import Scene
from condvln.synth.groups import GroupStats
from condvln.synth.informative import ConditionConfig
from condvln.synth.sampler import (
    Bucket,
    Instance,
    Rejected,
    SamplerSettings,
    SceneContext,
    counterfactual,
    synthesize_scene,
)

GENERATION_GRID = GridConfig(cache_size=128)
"""Navigator settings for generation: a larger field cache (every target is a goal often)."""


def success_radius(scene: Scene, multi_room: float = 1.0, single_room: float = 0.5) -> float:
    """The paper's success radius: 0.5 m for single-room scenes, 1.0 m otherwise (§5.1)."""
    return single_room if scene.is_single_room else multi_room


@dataclass(frozen=True)
class SceneSynthesis:
    """What one scene contributed: instances (pairs adjacent), rejections, graph, navigator."""

    instances: list[Instance]
    rejections: Counter[str]
    graph: SceneGraph
    nav: GridNavigator
    radius: float


def scene_context(
    scene: Scene,
    relation_config: RelationConfig | None = None,
    groups: GroupStats | None = None,
    graph: SceneGraph | None = None,
    nav: GridNavigator | None = None,
    conditions: ConditionConfig | None = None,
    exact: ExactNavigator | None = None,
) -> SceneContext:
    """What :func:`synthesize` samples ``scene`` with: its graph (``graph`` when given, built
    with ``relation_config``), a grid navigator at :data:`GENERATION_GRID` and an exact one on
    its navigable area (``nav`` and ``exact`` when given), the run's condition-group counts
    and which conditions are worth asking."""
    graph = graph or build_scene_graph(scene, relation_config)
    nav = nav or GridNavigator(scene, config=GENERATION_GRID)
    return SceneContext(graph, nav, groups, conditions, exact)


def synthesize(  # long: the docstring documents each of its eleven arguments
    scene: Scene,
    *,
    seed: int,
    quota: int,
    leaf_offset: int = 0,
    counterfactual_share: float = 0.2,
    radius: float | None = None,
    relation_config: RelationConfig | None = None,
    buckets: list[Bucket] | None = None,
    groups: GroupStats | None = None,
    persistence: int = 1,
    context: SceneContext | None = None,
) -> SceneSynthesis:
    """Sample about ``quota`` instances (plus minimal-pair siblings) from ``scene``.

    Args:
        scene: The scene.
        seed: Seed of this scene's random stream.
        leaf_offset: The scene's rank in its stratum: rotates gold leaves and spreads the
            category quotas over scenes (:func:`~condvln.synth.sampler.category_rows`).
        quota: Instances to sample (in complete rows, to category quotas) before siblings
            are added.
        counterfactual_share: Probability that an instance gets a minimal-pair sibling.
        radius: Success radius (default: by room count, :func:`success_radius`).
        relation_config: Predicate thresholds (default config when omitted).
        buckets: Restrict sampling to these buckets (all of them by default).
        groups: Condition-group truth counts of the run's scenes (:mod:`condvln.synth.groups`);
            ``None`` asks any group, unweighted.
        persistence: Multiplies the attempt budget and the failed rows after which a category
            stops (:func:`~condvln.synth.sampler.synthesize_scene`), for categories the scene
            rarely holds.
        context: The scene's context already prepared (:func:`scene_context`) with the same
            relation config and groups, to reuse its navigator's distance fields; built when
            omitted.
    """
    rng = np.random.default_rng(seed)
    ctx = context or scene_context(scene, relation_config, groups)
    graph, nav = ctx.graph, ctx.nav
    radius = success_radius(scene) if radius is None else radius
    settings = SamplerSettings(success_radius=radius)
    found, rejections = synthesize_scene(
        ctx,
        quota,
        settings,
        rng,
        buckets=buckets,
        leaf_offset=leaf_offset,
        persistence=persistence,
    )
    instances: list[Instance] = []
    for index, inst in enumerate(found):
        if rng.random() >= counterfactual_share:
            instances.append(inst)
            continue
        try:
            sibling = counterfactual(ctx, inst, settings, rng)
        except Rejected as exc:
            rejections[exc.reason] += 1
            instances.append(inst)
            continue
        pair = f"{scene.id}#{index}"
        instances.append(dataclasses.replace(inst, pair_id=pair))
        instances.append(dataclasses.replace(sibling, pair_id=pair))
    return SceneSynthesis(instances, rejections, graph, nav, radius)
