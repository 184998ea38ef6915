"""tlc: a compiler for TileLang text (.tl) to CUDA C."""
__version__ = "0.1.0"
