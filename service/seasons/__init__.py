"""Seasons on a ladder: an event-sourced aggregate of its own (schemas/seasons.py,
engine.py: the rules; stream.py: the ``ladder_events`` stream; standings.py:
a season's standings from the ratings projection)."""
