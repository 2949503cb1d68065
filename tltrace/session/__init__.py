"""Capture: the TileLang tool, records, phases, and the on-disk store."""
