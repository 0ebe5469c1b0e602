"""Memoised recursive questions whose answers do not depend on the order they were asked in.

The project model answers questions that ask each other: what a function returns needs what
its callees return, what a parameter holds needs what its callers pass, what an attribute
holds needs both. A question met again while it is still being answered (a cycle: `a`
returns `b()`, `b` returns `a()`; `self.n = self.n + 1`) gets a stand-in answer at once (its
cycle value, unknown). An answer computed with a stand-in depends on where the cycle was
entered: kept for good, it would make later questions depend on which question came first,
and worker processes, which ask in different orders, reported different findings for one
file. So only answers that used no stand-in are kept for good; the others are kept only until
the outermost question being answered is done (within it every step is the same whatever was
asked before), and computed again from the question asked next time.

The same holds for questions nested deeper than Python's recursion limit allows: the
innermost one met by the limit gets its stand-in, so deep code degrades to unknown answers
instead of failing the run.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class Recursion:
    """The questions being answered, whether the current answer used a stand-in, and the
    answers that did (until the outermost question is answered)."""

    def __init__(self) -> None:
        self._active: set[Hashable] = set()
        self._used_stand_in = False
        self._scratch: dict[Hashable, Any] = {}

    def answer(self, key: Hashable, compute: Callable[[], T], stand_in: T) -> tuple[T, bool]:
        """The answer to `key` (`stand_in` when `key` is being answered already: a cycle),
        and whether it may be kept for good."""
        if key in self._active:
            self._used_stand_in = True
            return stand_in, False
        if key in self._scratch:
            self._used_stand_in = True
            return self._scratch[key], False
        self._active.add(key)
        outer, self._used_stand_in = self._used_stand_in, False
        result = stand_in
        try:
            result = compute()
        except RecursionError:
            # Questions asking each other deeper than Python's stack (a chain of thousands of
            # functions, each returning what the next returns): this one's answer is unknown,
            # its stand-in, and like a cycle's not kept, nor any answer that used it.
            self._used_stand_in = True
        finally:
            self._active.discard(key)
            used = self._used_stand_in
            self._used_stand_in = outer or used
            if not self._active:
                self._scratch.clear()
            elif used:
                self._scratch[key] = result
        return result, not used

    def active(self) -> bool:
        """Whether some question is being answered."""
        return bool(self._active)

    def take_stand_in_flag(self) -> bool:
        """Whether a stand-in was used since the flag was last taken; clears it (for a memo
        of the caller's own: keep an answer only if it used none)."""
        used, self._used_stand_in = self._used_stand_in, False
        return used

    def note_stand_in(self) -> None:
        """A stand-in of the caller's own was used (an answer that used it is not kept)."""
        self._used_stand_in = True

    def restore_stand_in_flag(self, used: bool) -> None:
        self._used_stand_in = used
