"""The systems dsh is measured against, each used in its own idiom, and the raw floors."""
