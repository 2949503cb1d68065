"""Edit-and-recompile: a pure three-way decision over texts, and a thin file layer."""
