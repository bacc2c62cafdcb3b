"""The bots at work in the service: practice opponents and the spectators' odds.

* ``accounts``: one player account per search level (migration 0035);
* ``match_port``: the only door to the match core (``service.matches``):
  start a match, read one viewer's view, send a seat's command;
* ``driver``: plays the bot's seat of practice matches, after each commit,
  in bounded background tasks (never on a request's path);
* ``odds``: the spectators' win probability after each commit, in bounded
  background tasks, kept per version in Redis;
* ``routes``: ``POST /api/practice``, ``GET /api/bots``,
  ``GET /api/matches/{id}/win-probability``;
* ``plugin``: mounts all of it on the API app (``service.app.PLUGINS``).

See docs/bots.md.
"""
