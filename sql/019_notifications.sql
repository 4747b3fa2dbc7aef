-- Failure notifications (docs/operations.md, "Notifications"): an owner's
-- channels (a signed webhook, a Slack incoming webhook, e-mail), each
-- with the kinds it wants and, optionally, the schedules it is for; and
-- the outbox of messages, filled by the sequencer in the transaction that
-- numbers the events they come from (so each is made exactly once,
-- whoever leads), and emptied by the leading events worker with retries.
CREATE TABLE notification_channels (
    owner        text NOT NULL,
    channel_id   text NOT NULL CHECK (channel_id ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    type         text NOT NULL CHECK (type IN ('webhook', 'slack', 'email')),
    url          text,                     -- webhook, slack
    email_to     text,                     -- email: addresses, comma-separated
    secret       text,                     -- webhook: whsec_<base64>
    kinds        text[] NOT NULL DEFAULT '{dead,failed,partial}'
                 CHECK (kinds <@ '{dead,failed,partial,recovery}'),
    schedule_ids uuid[],                   -- NULL: every schedule of the owner
    enabled      boolean NOT NULL DEFAULT true,
    created_by   text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, channel_id)
);

CREATE TABLE notifications (
    id           bigserial PRIMARY KEY,
    msg_id       text NOT NULL UNIQUE,     -- webhook-id: one per event and channel
    owner        text NOT NULL,
    channel_id   text NOT NULL,
    kind         text NOT NULL,            -- dead, failed, partial, recovery
    schedule_id  uuid,
    subject      text NOT NULL,            -- the schedule or the execution
    event_seq    bigint NOT NULL,
    payload      jsonb NOT NULL,
    status       text NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts     integer NOT NULL DEFAULT 0,
    next_at      timestamptz NOT NULL DEFAULT now(),
    last_error   text,
    http_status  integer,
    created_at   timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz
);
CREATE INDEX notifications_due ON notifications (next_at) WHERE status = 'pending';
CREATE INDEX notifications_owner ON notifications (owner, id);

-- The sequencer's view of an event grows what a notification needs.
ALTER TYPE cronvisor_event_head
    ADD ATTRIBUTE seq bigint,
    ADD ATTRIBUTE owner text,
    ADD ATTRIBUTE schedule_id uuid;
