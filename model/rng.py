"""Seeded random streams: one `random.Random` per purpose of one seed.

A stream's state depends only on the seed and its purpose's name, so drawing
more from one (a router choosing) never moves another (the traffic).
"""

import random

__all__ = ["stream"]


def stream(seed: int, purpose: str) -> random.Random:
    """An independent random stream for one purpose of one seed."""
    return random.Random(f"prefix-lab/{seed}/{purpose}")
