"""Hardware: the presets (the article's spec-sheet arithmetic) and the GPUs fitted to measured kernels."""
