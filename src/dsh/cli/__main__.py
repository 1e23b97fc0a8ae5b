"""``python -m dsh.cli``: run the ``dsh`` command line (same as the console script)."""

from dsh.cli.app import main

main()
