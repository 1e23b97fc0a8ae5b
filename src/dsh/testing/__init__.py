"""Test doubles users need too: the local OpenAI-compatible SSE server."""
