-- 012_data_sources.sql: the tables data-source strings may read
-- (docs/orchestration.md, "Fan-out").  An admin registers a table or view
-- under a name, with the columns that may be read (each under the name
-- the strings use, with the quoted identifier and the type found when it
-- was registered) and the owners that may use it ('{}': every owner).
-- The queries run as a read-only role (datasource_role, by default
-- cronvisor_reader), which this migration creates when it may, and which
-- must be granted SELECT on the registered columns.

CREATE TABLE data_sources (
    name         text PRIMARY KEY
                 CHECK (name ~ '^[A-Za-z_][A-Za-z0-9_]{0,62}$'),
    relation     text NOT NULL CHECK (length(relation) BETWEEN 1 AND 200),
    relation_sql text NOT NULL,
    key_column   text NOT NULL,
    columns      jsonb NOT NULL CHECK (jsonb_typeof(columns) = 'array'),
    owners       text[] NOT NULL DEFAULT '{}',
    description  text NOT NULL DEFAULT '' CHECK (length(description) <= 10000),
    created_by   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'cronvisor_reader') THEN
        BEGIN
            CREATE ROLE cronvisor_reader NOLOGIN;
        EXCEPTION
            -- another database of the cluster migrating at the same time
            WHEN duplicate_object OR unique_violation THEN NULL;
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'cronvisor: cannot create the role '
                    'cronvisor_reader: create it, GRANT it to this user and '
                    'SELECT on the registered columns to it '
                    '(docs/orchestration.md)';
        END;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'cronvisor_reader')
       AND NOT pg_has_role(current_user, 'cronvisor_reader', 'MEMBER') THEN
        BEGIN
            EXECUTE format('GRANT cronvisor_reader TO %I', current_user);
        EXCEPTION WHEN insufficient_privilege OR unique_violation THEN
            RAISE NOTICE 'cronvisor: cannot GRANT cronvisor_reader to %',
                current_user;
        END;
    END IF;
END $$;
