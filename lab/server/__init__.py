"""`prefix-lab serve` and the workshop room: the HTTP server, the room's state and its scorer. CPython only."""
