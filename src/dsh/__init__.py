"""dsh: durable, forkable agent sessions and keyless, deterministic replay of real runs."""

__version__ = "0.1.0"
