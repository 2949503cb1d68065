"""Rendering: the Rich terminal stream and the self-contained HTML report."""
