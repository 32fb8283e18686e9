"""Harnesses for the browser tests, the benchmarks and the screenshot scripts: never shipped."""
