"""``Draws`` against numpy: the integers ``Generator.integers`` gives and the state it leaves."""

from __future__ import annotations

import numpy as np
import pytest

from condvln.program.draws import CHUNK, Draws


@pytest.mark.parametrize("seed", range(8))
def test_draws_give_numpys_integers_and_leave_its_state(seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    sizes = rng.choice(
        [1, 2, 3, 7, 24, 1000, 2**31 + 1, 2**32 - 1], size=int(rng.integers(0, 4 * CHUNK))
    )
    ours, numpys = np.random.default_rng(seed), np.random.default_rng(seed)
    ours.integers(5), numpys.integers(5)  # leaves half of a 64-bit word in the generator
    with Draws(ours) as draws:
        got = [draws.integers(int(n)) for n in sizes]
    assert got == [int(numpys.integers(int(n))) for n in sizes]
    assert ours.bit_generator.state == numpys.bit_generator.state
    assert ours.integers(1 << 40) == numpys.integers(1 << 40)


def test_a_range_near_two_to_the_32_rejects_as_numpy_does() -> None:
    """n = 2**31 + 1 rejects almost half the words: the redraws must match numpy's too."""
    ours, numpys = np.random.default_rng(5), np.random.default_rng(5)
    with Draws(ours) as draws:
        got = [draws.integers(2**31 + 1) for _ in range(3 * CHUNK)]
    assert got == [int(numpys.integers(2**31 + 1)) for _ in range(3 * CHUNK)]
    assert ours.bit_generator.state == numpys.bit_generator.state


@pytest.mark.parametrize("n", [0, -1, 2**32])
def test_a_range_numpy_would_not_draw_in_this_way_is_refused(n: int) -> None:
    with Draws(np.random.default_rng(0)) as draws, pytest.raises(ValueError, match="n must be"):
        draws.integers(n)
