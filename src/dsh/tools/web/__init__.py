"""``web_fetch``: fetching one HTTP(S) URL for the model (policy, retrieval, HTML → Markdown)."""
