"""Extractors: pure functions (path, text) -> FileFacts, one per input kind."""
