# scripts/stack-lib.sh: shell functions (POSIX sh) shared by the scripts
# that run the whole local stack of cronvisor: scripts/dev-up,
# scripts/dev-down, scripts/dev-smoke and tests/api-harness.sh.
#
#   nginx (loopback port) ── packaging/nginx/cronvisor*.conf ── FastCGI ──▶
#   cronvisor-api (unix socket) ──▶ PostgreSQL ◀── cronvisord
#   ── receiver POSTs ──▶ nginx /receiver (200)
#
# Source it; it defines functions only (prefix stack_) and sets nothing
# else.  Every wait is bounded.  Its functions use variables of their own
# named _stk_*, so they do not clobber the caller's.

# stack_pid PIDFILE WORD [NAME]: prints the pid in PIDFILE if that process
# runs and its command line mentions WORD (and NAME, the program), so that
# a recycled pid is never taken for ours; 1 otherwise.  A zombie has an
# empty command line, so it does not count either.
stack_pid() {
	[ -s "$1" ] || return 1
	_stk_p=$(head -n 1 "$1")
	case $_stk_p in '' | *[!0-9]*) return 1 ;; esac
	_stk_c=$({ tr '\0' ' ' <"/proc/$_stk_p/cmdline"; } 2>/dev/null) ||
		return 1
	case $_stk_c in *"$2"*) ;; *) return 1 ;; esac
	if [ -n "${3:-}" ]; then
		case $_stk_c in *"$3"*) ;; *) return 1 ;; esac
	fi
	echo "$_stk_p"
}

# stack_pid_cwd PIDFILE DIR NAME: prints the pid in PIDFILE if that process
# runs, its command line mentions NAME and its working directory is DIR
# (a process started with relative paths); 1 otherwise.
stack_pid_cwd() {
	[ -s "$1" ] || return 1
	_stk_p=$(head -n 1 "$1")
	case $_stk_p in '' | *[!0-9]*) return 1 ;; esac
	_stk_c=$({ tr '\0' ' ' <"/proc/$_stk_p/cmdline"; } 2>/dev/null) ||
		return 1
	case $_stk_c in *"$3"*) ;; *) return 1 ;; esac
	[ "$(readlink "/proc/$_stk_p/cwd" 2>/dev/null)" = "$2" ] || return 1
	echo "$_stk_p"
}

# stack_kill_wait PID [SAY]: SIGTERM, up to 5 s, then SIGKILL and up to
# 2 s more.  SAY (a function name) tells of the SIGKILL.
stack_kill_wait() {
	kill -TERM "$1" 2>/dev/null || return 0
	_stk_i=0
	while kill -0 "$1" 2>/dev/null && [ $_stk_i -lt 50 ]; do
		sleep 0.1
		_stk_i=$((_stk_i + 1))
	done
	kill -0 "$1" 2>/dev/null || return 0
	${2:-echo} "pid $1 ignored SIGTERM for 5 s; SIGKILL" >&2
	kill -KILL "$1" 2>/dev/null
	_stk_i=0
	while kill -0 "$1" 2>/dev/null && [ $_stk_i -lt 20 ]; do
		sleep 0.1
		_stk_i=$((_stk_i + 1))
	done
}

# stack_stop PIDFILE WORD [NAME [SAY]]: stops the process of PIDFILE (if it
# still is that program, see stack_pid) and removes the file.  Prints the
# pid it stopped; 1 if there was nothing to stop.
stack_stop() {
	_stk_rc=1
	if _stk_sp=$(stack_pid "$1" "$2" "${3:-}"); then
		# nginx's workers are its children: if the master must be
		# killed, they would be left behind.
		_stk_kids=$(pgrep -P "$_stk_sp" 2>/dev/null || true)
		stack_kill_wait "$_stk_sp" "${4:-}"
		for _stk_k in $_stk_kids; do
			kill -KILL "$_stk_k" 2>/dev/null || true
		done
		echo "$_stk_sp"
		_stk_rc=0
	fi
	rm -f "$1"
	return $_stk_rc
}

# stack_nginx_orphans LOG: the pids of nginx workers left without their
# master (a kill -9 of the master leaves them running, still listening;
# their parent is then init or a subreaper),
# known as ours by the nginx error LOG they hold open.
stack_nginx_orphans() {
	for _stk_o in $(pgrep -f '^nginx: worker process' 2>/dev/null); do
		_stk_pp=$(ps -o ppid= -p "$_stk_o" 2>/dev/null | tr -d ' ')
		case $({ tr '\0' ' ' <"/proc/${_stk_pp:-0}/cmdline"; } 2>/dev/null) in
		'nginx: master'*) continue ;;
		esac
		for _stk_f in /proc/"$_stk_o"/fd/*; do
			if [ "$(readlink "$_stk_f" 2>/dev/null)" = "$1" ]; then
				echo "$_stk_o"
				break
			fi
		done
	done
}

# stack_kill_nginx_orphans LOG: kills them (stack_nginx_orphans); prints
# their pids.
stack_kill_nginx_orphans() {
	for _stk_o in $(stack_nginx_orphans "$1"); do
		kill -KILL "$_stk_o" 2>/dev/null && echo "$_stk_o"
	done
}

# stack_spawn PIDFILE LOG COMMAND...: starts COMMAND in the background,
# stdin from /dev/null, stdout and stderr appended to LOG, and writes its
# pid to PIDFILE.  COMMAND must exec its program (setpriv, setsid and nohup
# do) so that the pid is the program's.
stack_spawn() {
	_stk_pf=$1
	_stk_log=$2
	shift 2
	"$@" </dev/null >>"$_stk_log" 2>&1 &
	echo $! >"$_stk_pf"
}

# stack_exec_wait PIDFILE DIR NAME: waits (10 s at most) until the process
# stack_spawn started has exec'd NAME (between fork and exec its command
# line is still the shell's) and prints its pid; 1 if it died first.
stack_exec_wait() {
	_stk_w=$(head -n 1 "$1" 2>/dev/null) || return 1
	_stk_i=0
	while [ $_stk_i -lt 100 ]; do
		stack_pid "$1" "$2" "$3" && return 0
		kill -0 "$_stk_w" 2>/dev/null || return 1
		sleep 0.1
		_stk_i=$((_stk_i + 1))
	done
	return 1
}

# stack_poll SECONDS COMMAND...: runs COMMAND every 0.1 s until it
# succeeds; 1 if it never did.
stack_poll() {
	_stk_n=$(($1 * 10))
	shift
	_stk_j=0
	while [ $_stk_j -lt $_stk_n ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
		_stk_j=$((_stk_j + 1))
	done
	return 1
}

# stack_http_code_is WANT URL: GET URL answers with status WANT.
stack_http_code_is() {
	[ "$(curl -s -o /dev/null -w '%{http_code}' --connect-timeout 1 \
		--max-time 2 "$2")" = "$1" ]
}

# stack_free_port: a loopback TCP port nobody listens on right now.
stack_free_port() {
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# stack_port_free PORT: nobody listens on 127.0.0.1:PORT (nor on every
# address) right now.  SO_REUSEADDR, as nginx binds: a connection in
# TIME_WAIT does not make the port busy.
stack_port_free() {
	python3 -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))' "$1" 2>/dev/null
}

# stack_clean_env: the daemons read CRONVISOR_* variables as configuration
# that overrides their file: the caller's (a sourced env of another stack)
# must not leak into them.
stack_clean_env() {
	for _stk_v in $(env | sed -n 's/^\(CRONVISOR_[A-Z_]*\)=.*/\1/p'); do
		unset "$_stk_v"
	done
}

# stack_write_conf FILE DATABASE-URL PORT SOCKET NAME [EXTRA]: the
# cronvisor.conf of cronvisord and cronvisor-api: the database, the
# receiver at nginx's /receiver on PORT, agents' reports to the API
# behind it (agent_callback_url), the API on unix socket SOCKET
# (0600, the process's group: nginx runs as the same user), supervisor
# NAME, commands run as cronvisor-run (see stack_run_user), then EXTRA
# (more "key = value" lines).
stack_write_conf() {
	{
		cat <<EOF
database_url = "$2"
receiver_url = "http://127.0.0.1:$3/receiver"
agent_callback_url = "http://127.0.0.1:$3/api/v1"
supervisor_name = "$5"
api_listen = "unix:$4"
api_socket_mode = 0600
api_socket_group = ""
api_threads = 4
api_max_body_bytes = 1048576
run_user_default = "cronvisor-run"
EOF
		[ -z "${6:-}" ] || printf '%s\n' "$6"
	} >"$1"
}

# stack_run_user: as root, makes cronvisor-run (the packages' unprivileged
# user of runs) if it is missing; a supervisor that is not root runs
# commands as itself and needs none.
stack_run_user() {
	[ "$(id -u)" = 0 ] || return 0
	getent passwd cronvisor-run >/dev/null ||
		useradd --system --user-group --no-create-home \
			--home-dir /nonexistent --shell /usr/sbin/nologin cronvisor-run
}

# stack_write_nginx DIR PORT SOCKET PIDFILE LOG RECEIVER-LOG SRC: writes
# DIR/nginx.conf (start it with: nginx -p DIR -c DIR/nginx.conf -e LOG;
# it stays in the foreground), which serves on 127.0.0.1:PORT
#   /api/           the shipped snippets SRC/packaging/nginx/cronvisor.conf
#                   (server block) and cronvisor-http.conf (http block), the
#                   latter's upstream server rewritten to unix:SOCKET
#   /admin/         the console, the same snippet's, its files read from
#                   SRC/api/ui instead of /usr/share/cronvisor/ui
#   /receiver       the stand-in receiver of schedules without a target:
#                   200 {"ok": true}, one line per request in RECEIVER-LOG
#                   ending in the request body, JSON-escaped (the body is
#                   read by passing the request on to /receiver-ok, which
#                   answers; nginx keeps no body it only returns to)
#   /redirect-to/H  302 to http://H:PORT/landing, and /landing (200), both
#                   logged in RECEIVER-LOG: the host-list tests' redirects
#   /static.json    a static file (readiness check, bench/api.sh's yardstick)
# nginx's pid goes to PIDFILE, its errors to LOG.  As root its workers
# would switch to nobody, who cannot reach a 0600 socket, so the user
# directive keeps them the current user.  1 with a message on stderr if
# nginx's files or the snippet's fastcgi_pass are missing.
stack_write_nginx() {
	_stk_d=$1
	mkdir -p "$_stk_d/tmp" "$_stk_d/static" || return 1
	# The snippet includes fastcgi_params relative to the configuration's
	# directory, /etc/nginx when installed, DIR here.
	if ! cp /etc/nginx/fastcgi_params /etc/nginx/mime.types "$_stk_d/"; then
		echo "no /etc/nginx/fastcgi_params (install nginx)" >&2
		return 1
	fi
	# The console's files are served from the checkout (api/ui).
	sed "s|/usr/share/cronvisor/ui|$7/api/ui|g" \
		"$7/packaging/nginx/cronvisor.conf" >"$_stk_d/cronvisor-api.conf" ||
		return 1
	sed "s|unix:/run/cronvisor/api.sock|unix:$3|" \
		"$7/packaging/nginx/cronvisor-http.conf" >"$_stk_d/cronvisor-http.conf"
	if ! grep -qF "unix:$3;" "$_stk_d/cronvisor-http.conf"; then
		echo "packaging/nginx/cronvisor-http.conf has no server to rewrite" >&2
		return 1
	fi
	_stk_user=""
	[ "$(id -u)" = 0 ] && _stk_user="user $(id -un) $(id -gn);"
	printf '{"static": true}\n' >"$_stk_d/static/static.json"
	cat >"$_stk_d/nginx.conf" <<EOF
$_stk_user
worker_processes 2;
daemon off;
pid $4;
error_log $5 warn;
# tests/api_load.sh's 1,000 clients: a client connection and one to the
# API each, in one worker at worst.
worker_rlimit_nofile 8192;
events { worker_connections 4096; }
http {
    include mime.types;
    include $_stk_d/cronvisor-http.conf;
    access_log off;
    client_body_temp_path $_stk_d/tmp/body;
    fastcgi_temp_path $_stk_d/tmp/fastcgi;
    proxy_temp_path $_stk_d/tmp/proxy;
    scgi_temp_path $_stk_d/tmp/scgi;
    uwsgi_temp_path $_stk_d/tmp/uwsgi;
    log_format receiver escape=json '\$request_method \$uri \$status \$content_length \$content_type \$request_body';
    server {
        listen 127.0.0.1:$2;
        include $_stk_d/cronvisor-api.conf;
        # The stand-in receiver of schedules without a target.
        location = /receiver {
            access_log $6 receiver;
            client_body_buffer_size 1m;
            proxy_pass http://127.0.0.1:$2/receiver-ok;
        }
        location = /receiver-ok {
            default_type application/json;
            return 200 '{"ok": true}';
        }
        # For the tests of the HTTP host lists (tests/security.sh):
        # /redirect-to/HOST answers 302 to http://HOST:PORT/landing, and
        # /landing answers like /receiver; both are logged with it.
        location ~ ^/redirect-to/([A-Za-z0-9.:-]+)\$ {
            access_log $6 receiver;
            return 302 http://\$1:$2/landing;
        }
        location = /landing {
            access_log $6 receiver;
            default_type application/json;
            return 200 '{"ok": true}';
        }
        # A static file: the readiness check, and bench/api.sh's yardstick.
        location = /static.json {
            root $_stk_d/static;
        }
    }
}
EOF
}
