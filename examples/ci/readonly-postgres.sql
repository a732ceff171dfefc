-- A read-only PostgreSQL role for lb-reconciler's state (Pulumi's DIY postgres:// backend): for
-- CI previews (`lb-reconciler preview`) and people's inspection (`lb-reconciler stacks`). It may
-- log in, connect to the backend's database, use the table's schema and SELECT the state table;
-- nothing else is granted. Every write through it fails at the server ("permission denied").
--
-- Parameters (psql variables; the defaults in brackets):
--   role      the role to make or update                [lbr_readonly]
--   password  its password                              (required)
--   table     the backend URL's table= parameter        [pulumi_state]
--   schema    the table's schema                        [public]
--
-- Run it as a role that may create roles and grant on the table (a superuser, or one with
-- CREATEROLE that owns the table), connected to the database of the controller's backend URL,
-- after the controller (or any `pulumi`) has opened the backend once: the table must exist.
--
--   psql "postgres://ADMIN@HOST:5432/DATABASE?sslmode=require" \
--       -v role=lbr_readonly -v password="$READONLY_PASSWORD" -f examples/ci/readonly-postgres.sql
--
-- The read-only backend URL is then the controller's with this role's name and password:
--   postgres://lbr_readonly:PASSWORD@HOST:5432/DATABASE?sslmode=require
-- (with &table=NAME when the controller's URL has one). Running the file again sets the password
-- and the grants; an existing role keeps its other attributes and grants. A role is cluster-wide:
-- one may be granted several databases.
--
-- What PostgreSQL gives every role through PUBLIC is not revoked here (it would change it for all
-- roles): CONNECT and TEMPORARY on databases and, before PostgreSQL 15, CREATE on the schema
-- public. On PostgreSQL 14 or older, `REVOKE CREATE ON SCHEMA public FROM PUBLIC` (if nothing
-- relies on it) takes the last one away.
--
-- The plain `pulumi` CLI cannot use this role: it runs CREATE TABLE IF NOT EXISTS and CREATE
-- INDEX IF NOT EXISTS each time it opens a postgres:// backend, which need CREATE on the schema
-- and ownership of the table (docs/inspect.md). Without psql: replace :"role", :'password',
-- :"table", :"schema" and :"DBNAME" (the database) by hand. Names are as the CLI's SQL folds
-- them: lower case.

\set ON_ERROR_STOP on
\if :{?role}
\else
  \set role lbr_readonly
\endif
\if :{?table}
\else
  \set table pulumi_state
\endif
\if :{?schema}
\else
  \set schema public
\endif
\if :{?password}
\else
  DO $$ BEGIN RAISE EXCEPTION 'no password: psql -v password=... -f readonly-postgres.sql'; END $$;
\endif

SELECT NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'role') AS role_missing \gset
\if :role_missing
  CREATE ROLE :"role" LOGIN PASSWORD :'password'
      NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT;
\else
  ALTER ROLE :"role" LOGIN PASSWORD :'password';
\endif

GRANT CONNECT ON DATABASE :"DBNAME" TO :"role";
GRANT USAGE ON SCHEMA :"schema" TO :"role";
GRANT SELECT ON TABLE :"schema".:"table" TO :"role";
