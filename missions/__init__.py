"""Missions: data and star scoring (filled in by the missions issue)."""

__all__: list[str] = []
