"""The command line: `prefix-lab` and its verbs. CPython only."""
