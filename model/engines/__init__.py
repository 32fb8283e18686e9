"""Replica engines: lab mode's replica (prefill only, the seed's model) and serving mode's (batched decode under one KV budget, chunked prefill, split prefill and decode roles)."""
