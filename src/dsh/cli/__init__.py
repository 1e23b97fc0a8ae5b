"""The ``dsh`` command line: a composition root over stores, models, tools and replay."""
