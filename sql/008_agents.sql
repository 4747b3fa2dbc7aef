-- 008_agents.sql: the agent registry (seed 004's AgentRegistry and
-- AgentVersionDeployment, docs/agents.md).  An agent is an HTTP endpoint
-- that accepts a job and reports back; it belongs to an owner (a tenant),
-- and its id is a slug unique within the owner.  Versions have their own
-- endpoint and input schema; one version is deployed per environment, and
-- every deploy, promote and rollback is kept with who and when.

CREATE TABLE agents (
    owner          text NOT NULL CHECK (length(owner) BETWEEN 1 AND 200),
    agent_id       text NOT NULL
                   CHECK (agent_id ~ '^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$'),
    name           text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    description    text NOT NULL DEFAULT '' CHECK (length(description) <= 10000),
    endpoint       text NOT NULL CHECK (length(endpoint) BETWEEN 1 AND 2048),
    -- auth: none, bearer (secret = the token), basic (username, secret =
    -- the password), hmac (secret = the key of an HMAC-SHA256 of the body).
    -- The secret is never shown by the API nor logged.
    auth_type      text NOT NULL DEFAULT 'none'
                   CHECK (auth_type IN ('none', 'bearer', 'basic', 'hmac')),
    auth_username  text CHECK (length(auth_username) <= 200),
    auth_secret    text CHECK (length(auth_secret) <= 4096),
    timeout_ms     bigint NOT NULL DEFAULT 300000
                   CHECK (timeout_ms BETWEEN 1 AND 31536000000),
    -- 0: no limit of its own (the configured global one still holds)
    max_concurrent_requests integer NOT NULL DEFAULT 0
                   CHECK (max_concurrent_requests BETWEEN 0 AND 100000),
    -- a job still running after 202 must report a heartbeat this often
    -- (NULL: none needed; its deadline alone ends it)
    heartbeat_seconds integer CHECK (heartbeat_seconds BETWEEN 1 AND 86400),
    health_url     text CHECK (length(health_url) BETWEEN 1 AND 2048),
    health_interval_seconds integer NOT NULL DEFAULT 60
                   CHECK (health_interval_seconds BETWEEN 5 AND 86400),
    when_unhealthy text NOT NULL DEFAULT 'wait'
                   CHECK (when_unhealthy IN ('wait', 'go')),
    input_schema   jsonb,
    enabled        boolean NOT NULL DEFAULT true,
    -- the latest health probe (agent_health has the history)
    healthy        boolean,                -- NULL: never probed, or no health_url
    health_error   text,
    health_checked_at timestamptz,
    health_next_at timestamptz,            -- when a supervisor probes it next
    created_by     text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, agent_id),
    CHECK (auth_type NOT IN ('bearer', 'basic', 'hmac') OR auth_secret IS NOT NULL),
    CHECK (auth_type <> 'basic' OR auth_username IS NOT NULL)
);
CREATE INDEX agents_created ON agents (created_at, owner, agent_id);
CREATE INDEX agents_health_due ON agents (health_next_at)
    WHERE health_url IS NOT NULL AND enabled;

CREATE TABLE agent_versions (
    owner        text NOT NULL,
    agent_id     text NOT NULL,
    version      text NOT NULL
                 CHECK (version ~ '^[0-9]{1,9}\.[0-9]{1,9}\.[0-9]{1,9}([-+][0-9A-Za-z.+-]{1,64})?$'),
    endpoint     text NOT NULL CHECK (length(endpoint) BETWEEN 1 AND 2048),
    input_schema jsonb,
    description  text NOT NULL DEFAULT '' CHECK (length(description) <= 10000),
    created_by   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, agent_id, version),
    FOREIGN KEY (owner, agent_id) REFERENCES agents ON DELETE CASCADE
);

-- One deployed version per environment.
CREATE TABLE agent_deployments (
    owner        text NOT NULL,
    agent_id     text NOT NULL,
    environment  text NOT NULL
                 CHECK (environment IN ('production', 'staging', 'development')),
    version      text NOT NULL,
    deployed_by  text NOT NULL,
    deployed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, agent_id, environment),
    FOREIGN KEY (owner, agent_id, version) REFERENCES agent_versions
        ON DELETE CASCADE
);

-- Every deploy, promote and rollback, the newest last.
CREATE TABLE agent_deploy_log (
    id           bigserial PRIMARY KEY,
    owner        text NOT NULL,
    agent_id     text NOT NULL,
    environment  text NOT NULL,
    action       text NOT NULL CHECK (action IN ('deploy', 'promote', 'rollback')),
    version      text NOT NULL,
    previous     text,                  -- the version it replaced, if any
    by_whom      text NOT NULL,         -- "owner (token N)" that did it
    at           timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (owner, agent_id) REFERENCES agents ON DELETE CASCADE
);
CREATE INDEX agent_deploy_log_agent ON agent_deploy_log (owner, agent_id, id);

-- Health probes, the newest 100 per agent (the supervisor prunes).
CREATE TABLE agent_health (
    id           bigserial PRIMARY KEY,
    owner        text NOT NULL,
    agent_id     text NOT NULL,
    checked_at   timestamptz NOT NULL DEFAULT now(),
    ok           boolean NOT NULL,
    http_status  integer,
    latency_ms   bigint,
    error        text,
    FOREIGN KEY (owner, agent_id) REFERENCES agents ON DELETE CASCADE
);
CREATE INDEX agent_health_agent ON agent_health (owner, agent_id, id DESC);
