#!/bin/sh
# Runs once, when the primary's volume is new (after 10-app-role.sh): a login role
# for streaming replication, the physical slot the standby streams through (the
# primary keeps every WAL segment the standby has not received, however long it is
# away), and the pg_hba line that lets that role replicate.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
     -v replication_password="$MATCHA_REPLICATION_PASSWORD" <<'SQL'
CREATE ROLE matcha_replication REPLICATION LOGIN PASSWORD :'replication_password';
SELECT pg_create_physical_replication_slot('matcha_standby');
SQL
echo "host replication matcha_replication all scram-sha-256" >> "$PGDATA/pg_hba.conf"
