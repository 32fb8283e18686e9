"""CPython-only pieces the command line, the build and the server share: the public traces and kernel profiles read from ../shared, the missions on replayed traffic, and a run's declared bound."""
