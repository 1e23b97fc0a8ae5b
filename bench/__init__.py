"""dsh's benchmark suite (``make bench``): see ``bench/README.md``. Not part of ``make test``."""
