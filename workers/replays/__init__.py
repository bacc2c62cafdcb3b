"""The RQ jobs that build replay archives on request (the archives projection,
``workers.projections.archives``, keeps them current by itself):

* ``build``: ``build_archive(match_id)``, one archive now;
* ``batch``: ``build_archives(match_ids)``, a backlog, pipelined.

The archive itself (record, frames, packing, the one loader and upsert) is
``service.replays``. docs/replays.md.
"""

from workers.replays.batch import ARCHIVE_BATCH, ARCHIVE_FIRST_BATCH, build_archives
from workers.replays.build import build_archive

__all__ = ["ARCHIVE_BATCH", "ARCHIVE_FIRST_BATCH", "build_archive", "build_archives"]
