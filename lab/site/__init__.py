"""The static site's build: Panel's layout, the assets, the trimmed standard library, the memory snapshot
the page boots from, and the docs. CPython only."""
