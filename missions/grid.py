"""A mission's grid: the setups its sweep runs, declared as one or more blocks of values.

A `Block` names a few of the mission's controls and a short list of text
values for each (the values `--set` and the URL take); its setups are every
combination of one value per key, and keys it does not name keep the
mission's start. A grid is a tuple of blocks, so a control that only matters
for one choice of another (the spill threshold only steers the cache-aware
router; replicas do not count once prefill and decode are split) is swept
where it matters instead of repeating identical runs. `setups(grid)` lists
the grid's setups in declaration order, each once.

Standard library only; no model import, so the catalog can declare grids freely.
"""

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Block", "block", "setups"]


@dataclass(frozen=True, slots=True)
class Block:
    """Every combination of one value per key, as `((key, (value, ...)), ...)`."""

    values: tuple[tuple[str, tuple[str, ...]], ...]

    def __post_init__(self) -> None:
        keys = [key for key, _ in self.values]
        if len(set(keys)) != len(keys) or any(not values for _, values in self.values):
            raise ValueError(f"a grid block needs distinct keys, each with at least one value: {self.values}")

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(key for key, _ in self.values)

    @property
    def size(self) -> int:
        n = 1
        for _, values in self.values:
            n *= len(values)
        return n

    def setups(self) -> list[dict[str, str]]:
        """Each combination as `{key: value}`, the last key changing fastest."""
        return [dict(zip(self.keys, combo, strict=True)) for combo in itertools.product(*(v for _, v in self.values))]

    def to_dict(self) -> dict[str, list[str]]:
        return {key: list(values) for key, values in self.values}


def block(**values: str) -> Block:
    """A block from keyword arguments: `fleet__replicas="1,2,4"` is key `fleet.replicas` with three values."""
    return Block(tuple((key.replace("__", "."), tuple(v.strip() for v in text.split(","))) for key, text in values.items()))


def setups(grid: Iterable[Block]) -> list[dict[str, str]]:
    """Every setup of every block, in order; a setup two blocks share (same keys, same values) comes once."""
    seen: set[tuple[tuple[str, str], ...]] = set()
    out = []
    for b in grid:
        for setup in b.setups():
            mark = tuple(sorted(setup.items()))
            if mark not in seen:
                seen.add(mark)
                out.append(setup)
    return out
