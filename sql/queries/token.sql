-- token.sql: the statements of "cronvisorctl token" (cli/token.c).  A
-- token's text is never stored: only its SHA-256, computed by PostgreSQL,
-- and its first 12 characters (prefix), which tell tokens apart in lists.

-- name: token_create
-- Token $1 of owner $2 with role $3 and note $4.
INSERT INTO tokens (hash, prefix, owner, role, note)
VALUES (sha256(convert_to($1, 'UTF8')), left($1, 12), $2, $3, $4)
RETURNING id;

-- name: token_list
-- Every token, without its hash, oldest first.
SELECT id, prefix, owner, role, cronvisor_time(created_at),
       cronvisor_time(revoked_at), note
FROM tokens
ORDER BY id;

-- name: token_revoke
-- No row: there is no such token, or it was revoked already.
UPDATE tokens SET revoked_at = now()
WHERE id = $1 AND revoked_at IS NULL
RETURNING prefix, owner;

-- name: token_revoked_at
SELECT cronvisor_time(revoked_at) FROM tokens WHERE id = $1;
