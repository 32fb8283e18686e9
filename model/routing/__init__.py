"""Routing: the policies, the dispatcher that applies them, and sgl-router's own tree of routed text."""
