-- db.sql: the statements of common/db.c, the wrapper of libpq.  BEGIN,
-- COMMIT, ROLLBACK and LISTEN stay in db.c: they are the wrapper's own
-- protocol (db_commit() reads COMMIT's answer, LISTEN is made of a
-- quoted channel name).

-- name: db_notify
-- Notification $2 on channel $1.
SELECT pg_notify($1, $2);
