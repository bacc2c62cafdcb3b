"""The web client: static ES modules and CSS, served by the service itself.

No build step and no CDN: ``service/web/static/`` is shipped as package data
and served under ``/static``; the four page addresses all return the one HTML
shell, whose script reads the address to pick the page.
"""
