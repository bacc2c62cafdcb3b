"""The Matcha match service: engine (pure), store, API, live streams."""
