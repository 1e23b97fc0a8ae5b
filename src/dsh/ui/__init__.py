"""dsh.ui: the local, read-only web viewer (``dsh ui``) and the HTML replay report.

Starlette + uvicorn + Jinja2 (the optional ``ui`` extra); see README.md beside this file.
"""
