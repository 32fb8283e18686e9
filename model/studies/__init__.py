"""The page's studies built on the core: the article's arithmetic and figures, the locality note, split and stall, queue order, hindsight, and the trees at a moment."""
