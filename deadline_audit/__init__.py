"""deadline-audit: find timeout and deadline design defects statically."""

__version__ = "0.1.0"
