#!/bin/sh
# The hot standby's entry point: on a new volume, a copy of the primary made by
# pg_basebackup -R (which writes primary_conninfo and standby.signal) through the
# slot matcha_standby; then PostgreSQL, replaying the primary's WAL as it streams
# and answering reads meanwhile. Promote it with `pg_ctl promote` (or
# SELECT pg_promote()) when the primary is gone for good (docs/scaling.md).
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    pg_basebackup --host=postgres-primary --username=matcha_replication \
        --pgdata="$PGDATA" --write-recovery-conf --slot=matcha_standby \
        --wal-method=stream --checkpoint=fast
    chmod 0700 "$PGDATA"
fi
exec postgres -c hot_standby=on -c hot_standby_feedback=on \
    -c cluster_name=matcha_standby -c max_connections=200
