"""Bounded integers drawn exactly as :meth:`numpy.random.Generator.integers` draws them, faster.

The renderer picks a paraphrase some 300 times per instruction, one ``integers(n)`` call each,
and numpy's per-call overhead (about a microsecond) was the largest single cost of rendering.
:class:`Draws` takes the generator's 32-bit words in one bulk draw, applies numpy's own
algorithm for a range below 2**32 (Lemire's multiply-and-reject, no draw at all for ``n ==
1``), and on :meth:`Draws.close` leaves the generator exactly where the same ``integers``
calls would have: the same numbers, the same state after them.

>>> import numpy as np
>>> gen, same = np.random.default_rng(7), np.random.default_rng(7)
>>> with Draws(gen) as draws:
...     ours = [draws.integers(n) for n in (3, 1, 10, 2, 1000)]
>>> ours == [int(same.integers(n)) for n in (3, 1, 10, 2, 1000)], gen.random() == same.random()
(True, True)
"""

from __future__ import annotations

from types import TracebackType

import numpy as np

_WORD = 1 << 32
_LOW = _WORD - 1
CHUNK = 64
"""32-bit words taken from the generator first; each further bulk draw takes as many as all
before it (a plain rendering needs a few dozen, an instruction's retries a few hundred)."""


class Draws:
    """``integers(n)`` of a :class:`numpy.random.Generator`, for ``1 <= n < 2**32``, from
    words drawn in bulk; :meth:`close` (or the end of a ``with`` block) rewinds the generator
    and advances it by the words used, so nothing else drawn from it changes."""

    def __init__(self, gen: np.random.Generator) -> None:
        self._gen = gen
        self._state = gen.bit_generator.state
        self._words: list[int] = []
        self._used = 0

    def integers(self, n: int) -> int:
        """A uniform integer in ``[0, n)``, the one ``gen.integers(n)`` would give."""
        if n == 1:
            return 0  # numpy draws nothing for a range of one value
        if not 1 < n < _WORD:
            raise ValueError(f"n must be in [1, 2**32), got {n}")
        product = self._word() * n
        if product & _LOW < n:
            threshold = (_WORD - n) % n
            while product & _LOW < threshold:
                product = self._word() * n
        return product >> 32

    def _word(self) -> int:
        if self._used == len(self._words):
            size = max(CHUNK, len(self._words))
            more = self._gen.integers(0, _WORD, size=size, dtype=np.uint32)
            self._words.extend(more.tolist())
        word = self._words[self._used]
        self._used += 1
        return word

    def close(self) -> None:
        """Leave the generator as the ``integers`` calls made so far would have left it."""
        if len(self._words) == self._used:
            return  # every word taken was used (or none was taken)
        self._gen.bit_generator.state = self._state
        if self._used:
            self._gen.integers(0, _WORD, size=self._used, dtype=np.uint32)
        self._state = self._gen.bit_generator.state
        self._words, self._used = [], 0

    def __enter__(self) -> Draws:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
