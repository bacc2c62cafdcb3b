"""The clustered shape on one machine (``make cluster``), from the Debian binaries.

* ``redis_nodes``: six ``redis-server`` nodes in cluster mode, 3 masters and 3 replicas.
* ``postgres_pair``: a PostgreSQL primary and a streaming hot standby (a replication slot).
* ``proxy``: nginx, each match's requests sticking to one API (consistent hash of its id).
* ``shape``: all of it in order, with two ``matcha api`` and two ``matcha worker``
  processes, under the supervisor ``matcha run`` uses (``service.supervisor``).
* ``command``: ``matcha cluster up`` / ``matcha cluster stop``.

docs/scaling.md says what the shape is for and what it measures.
"""
