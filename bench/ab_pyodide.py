"""A new setup's Pyodide CPU, this tree against another revision, taken in turns so the machine's speed cancels out.

    python bench/ab_pyodide.py REVISION [--setups N]

On a shared machine a run's CPU time moves by a third from one minute to the
next, which hides a change of a few per cent. This builds the page's wheel
from REVISION (a git revision of this repository, checked out into a
temporary worktree) and from the working tree, loads both in one Node
process (two Pyodides), and gives them the same new setups (other seeds) in
turn, the order alternating: the default setup N times (41 by default) and
16 cache-aware replicas at 8 sessions a second half as often. It prints
each version's median CPU per setup and the median of the setups' own
after/before ratios, the figure that holds still while the machine does not:
for the whole answer, and for its simulation alone (the traffic, the run and
its measuring: the model's part, which the page's figures around it do not
move). REVISION may be one from before the packages by seam (issue 28),
such as 6ea3f0e, where issue 30 was filed.
"""

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab.site.build import pyodide_dir  # noqa: E402

_WHEEL = """import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1])
try:
    from lab.site.build import _write_wheel
except ImportError:  # a revision from before the packages by seam (issue 28): the build was lab/build.py
    from lab.build import _write_wheel
out = Path(sys.argv[2]); print(out / Path(_write_wheel(out)).name)"""


def wheel_of(tree: Path, out: Path) -> Path:
    """The page's wheel as `tree`'s own build writes it."""
    done = subprocess.run([sys.executable, "-c", _WHEEL, str(tree), str(out)], capture_output=True, text=True,
                          check=True)
    return Path(done.stdout.strip().splitlines()[-1])


def new_setups_cpu(wheels: list[Path], setups: int) -> list[tuple[str, list[list[float]], list[list[float]]]]:
    """Each wheel's CPU milliseconds for `setups` new default setups and half as many with 16 cache-aware
    replicas, taken in turns (bench/ab_pyodide.mjs): [(label, [[ms of each answer] for each wheel],
    [[ms of its simulation] for each wheel])]."""
    node = shutil.which("node")
    if node is None:
        sys.exit("ab_pyodide: Node.js is needed (the project's setup installs it with npm)")
    done = subprocess.run([node, str(ROOT / "bench" / "ab_pyodide.mjs"), str(pyodide_dir()), str(setups),
                           *map(str, wheels)], capture_output=True, text=True, timeout=1800)
    if done.returncode:
        sys.exit(f"ab_pyodide: {done.stderr.strip()[-2000:] or 'Node failed'}")
    return [(row["label"], row["cpu"], row["sim"]) for row in map(json.loads, done.stdout.splitlines())]


def known_revision(revision: str) -> bool:
    """Whether `revision` names a commit of this repository."""
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"],
                          capture_output=True).returncode == 0


@contextlib.contextmanager
def revision_wheel(revision: str, tmp: Path) -> Iterator[Path]:
    """The page's wheel as `revision` (of this repository) builds it, from a worktree removed afterwards."""
    base = tmp / "base"
    added = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), revision],
                           capture_output=True, text=True)
    if added.returncode:
        sys.exit(f"ab_pyodide: cannot check out {revision!r}: {added.stderr.strip()}")
    try:
        yield wheel_of(base, tmp / "before")
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], capture_output=True)


def ratio_line(label: str, before: list[float], after: list[float]) -> str:
    """Both versions' median CPU and the median of the setups' own after/before ratios."""
    ratios = [y / x for x, y in zip(before, after)]
    return (f"{label}: a new setup's CPU before {statistics.median(before):.1f} ms, after {statistics.median(after):.1f}"
            f" ms (medians); after/before, the median of each setup's ratio, {statistics.median(ratios):.3f} "
            f"({len(before)} setups)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revision", help="the git revision to compare with, such as a commit or HEAD~3")
    parser.add_argument("--setups", type=int, default=41, help="new default setups per version (at least 5)")
    args = parser.parse_args()
    if args.setups < 5:
        parser.error(f"--setups {args.setups}: give at least 5, or the medians mean little")
    with tempfile.TemporaryDirectory() as tmp, revision_wheel(args.revision, Path(tmp)) as before:
        after = wheel_of(ROOT, Path(tmp) / "after")
        for label, (a, b), (sim_a, sim_b) in new_setups_cpu([before, after], args.setups):
            print(ratio_line(label, a, b))
            print(ratio_line(f"{label}, its simulation", sim_a, sim_b))


if __name__ == "__main__":
    main()
