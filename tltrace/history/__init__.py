"""history: see the README's Development section."""
