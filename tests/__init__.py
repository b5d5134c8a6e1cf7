"""evalcore's test suite. A regular package, so that ``tests.*`` resolves here before any
installed distribution's top-level ``tests`` (ppi-python ships one), in spawned children too."""
