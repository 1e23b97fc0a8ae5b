"""The agent loop: turns, steps, settlements, tool scheduling, persistence checkpoints."""
