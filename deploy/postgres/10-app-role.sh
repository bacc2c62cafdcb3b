#!/bin/sh
# Runs once, when the PostgreSQL container initialises an empty volume.
# Creates the database and the service's login role with its password; the
# migrations (run as the owner) then grant that role read + append only.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
     -v app_password="$MATCHA_APP_PASSWORD" <<'SQL'
CREATE ROLE matcha_app LOGIN PASSWORD :'app_password';
SQL
