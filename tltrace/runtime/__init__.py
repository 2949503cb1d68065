"""What a traced kernel did when it ran, read from outside tools' reports: compute-sanitizer's errors
named at the user's Python lines (sanitize.py, sanitizer_parse.py, sanitizer_lines.py)."""
