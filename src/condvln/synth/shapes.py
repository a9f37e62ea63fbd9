"""Program skeletons of the Table 1 categories and how to fill them.

A skeleton is a program whose conditions and targets are slots. Filling it with concrete
conditions (pre-order) and leaf targets (program order) gives a :class:`Program`; leaf ``i`` is
the ``i``-th entry of :func:`~condvln.program.ast.leaf_paths`.

>>> skeleton = SKELETONS["nested_chain"]
>>> (skeleton.n_conditions, skeleton.n_leaves)
(3, 4)
>>> skeleton.decisions(2)  # leaf 2 = A false, C true
(False, True)
>>> skeleton.on_path(2)  # condition slots evaluated on the way to leaf 2
(0, 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from condvln.program.ast import Condition, Go, If, Program, Ref, Step


@dataclass(frozen=True)
class _Slot:
    """An If slot: condition index, then-arm and else-arm (nested slots or leaf indices)."""

    condition: int
    then: _Slot | int
    orelse: _Slot | int


def _leaves(node: _Slot | int) -> list[int]:
    if isinstance(node, int):
        return [node]
    return _leaves(node.then) + _leaves(node.orelse)


@dataclass(frozen=True)
class Skeleton:
    """A Table 1 program shape with numbered condition and leaf slots."""

    category: str
    root: _Slot

    @property
    def n_leaves(self) -> int:
        """Number of leaf goals (= number of branches)."""
        return len(_leaves(self.root))

    @property
    def n_conditions(self) -> int:
        """Number of conditions."""
        return self.n_leaves - 1

    def _walk(self, leaf: int) -> list[tuple[int, bool]]:
        node: _Slot | int = self.root
        path = []
        while isinstance(node, _Slot):
            go_then = leaf in _leaves(node.then)
            path.append((node.condition, go_then))
            node = node.then if go_then else node.orelse
        return path

    def decisions(self, leaf: int) -> tuple[bool, ...]:
        """Truth each evaluated condition must have for execution to reach ``leaf``."""
        return tuple(value for _, value in self._walk(leaf))

    def on_path(self, leaf: int) -> tuple[int, ...]:
        """Condition slots evaluated on the way to ``leaf``, in order."""
        return tuple(index for index, _ in self._walk(leaf))

    def build(
        self,
        conditions: Sequence[Condition],
        leaves: Sequence[Ref | Sequence[Ref]],
        prefix: Sequence[Ref] = (),
    ) -> Program:
        """The program with ``prefix`` waypoints, then the conditional filled in.

        Leaf ``i`` is one target or the ordered targets of its arm ("go to the sofa and then to
        the lamp"); the arm's last target is the leaf goal.
        """

        def fill(node: _Slot | int) -> tuple[Step, ...]:
            if isinstance(node, int):
                arm = leaves[node]
                return tuple(Go(r) for r in ((arm,) if isinstance(arm, Ref) else arm))
            return (If(conditions[node.condition], fill(node.then), fill(node.orelse)),)

        return Program(tuple(Go(r) for r in prefix) + fill(self.root))


def _s(condition: int, then: _Slot | int, orelse: _Slot | int) -> _Slot:
    return _Slot(condition, then, orelse)


SKELETONS: dict[str, Skeleton] = {
    "simple": Skeleton("simple", _s(0, 0, 1)),
    "nested": Skeleton("nested", _s(0, _s(1, 0, 1), 2)),
    "deep_nested": Skeleton("deep_nested", _s(0, _s(1, _s(2, 0, 1), 2), 3)),
    "chain": Skeleton("chain", _s(0, 0, _s(1, 1, 2))),
    "long_chain": Skeleton("long_chain", _s(0, 0, _s(1, 1, _s(2, 2, 3)))),
    "nested_chain": Skeleton("nested_chain", _s(0, _s(1, 0, 1), _s(2, 2, 3))),
}
"""The six categories of the paper's Table 1."""
