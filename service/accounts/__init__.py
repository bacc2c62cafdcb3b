"""Accounts: players, their tokens and roles (``players``), and who is calling a
route or a live stream (``guards``: the bearer token, the role guards).

Below every adapter: the API, the live streams, bot play and the tournaments'
and the evidence's routes all sign their callers in here.
"""
