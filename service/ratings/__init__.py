"""The rating math, pure: ``elo`` and ``glicko2`` (the two systems, one result at
a time) and ``settings`` (a ladder's rating settings, a tagged choice read
strictly). The ratings projection (``workers.ratings``) folds the log with
them; the API uses them to show expected scores and deviations (docs/ratings.md).
"""
