-- 005_owner_limits.sql: what the per-owner limits of the API count
-- (docs/configuration.md, "Tenants").  trigger_counts holds the trigger
-- requests of each owner in the current calendar minute: the API adds one
-- per request, refuses past owner_max_triggers_per_minute, and drops the
-- owner's rows of earlier minutes as it goes, so an owner has one or two
-- rows at most.

CREATE TABLE trigger_counts (
    owner  text NOT NULL,
    minute timestamptz NOT NULL,
    n      integer NOT NULL CHECK (n > 0),
    PRIMARY KEY (owner, minute)
);
