"""Tasks: problem generators, prompt formats and the fixed splits under data/."""
