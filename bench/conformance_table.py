"""The conformance table: every recorded decision file replayed through the lab's policy for its router.

    python bench/conformance_table.py [DIR]

Reads `DIR` (default `bench/conformance/`, written by `bench/conformance_record.py`
from the real binaries), replays each file with `prefix-lab conformance`'s own
code (`sglang` for sgl-router files, `vllm_router` for vLLM router files) and
prints a Markdown table: the stream, the router, its thresholds, the decisions,
how many the lab makes the same way, and the causes of any that differ.
"""

import sys
from pathlib import Path

from lab.cli.conformance import policy_of, read_decisions, replay


def main() -> int:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "conformance"
    files = sorted(folder.glob("*.jsonl*"))
    if not files:
        print(f"no decision files in {folder}; record them with python bench/conformance_record.py", file=sys.stderr)
        return 2
    print("| stream | router | threshold / abs / rel | tree | decisions | agree | differ by |")
    print("| --- | --- | --- | --- | ---: | ---: | --- |")
    total = agree = 0
    for path in files:
        header, decisions = read_decisions(str(path))
        policy = policy_of(header) or "sglang"
        out = replay(header, decisions, policy)
        stream = path.name.split(".")[0].split("-", 1)[1]
        tree = f"{header['max_tree_size']:,} / {header['eviction_interval_secs']} s"
        causes = "; ".join(f"{n} {c}" for c, n in out["by_cause"].items()) or "–"
        print(f"| {stream} | {header['router']} | {header['cache_threshold']:g} / {header['balance_abs_threshold']} / "
              f"{header['balance_rel_threshold']:g} | {tree} | {out['decisions']} | {out['agree']} "
              f"({out['agree'] / out['decisions']:.1%}) | {causes} |")
        total += out["decisions"]
        agree += out["agree"]
    print(f"\nagree {agree} of {total} over {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
