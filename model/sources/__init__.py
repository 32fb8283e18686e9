"""Request sources: synthetic chat sessions, agent runs, closed users, and replayed traces."""
