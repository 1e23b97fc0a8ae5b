"""Repository tools that are not part of the dsh package: the documentation site's generator and hooks."""
