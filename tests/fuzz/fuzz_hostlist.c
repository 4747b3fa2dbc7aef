/*
 * fuzz_hostlist.c: libFuzzer target for hostlist_parse(), hostlist_check()
 * and hostlist_url_host().  The input is split at its first two newlines
 * into a list, a host (or URL) and an address.  The list is parsed as
 * http_deny_hosts and as http_allow_hosts; when it parses, the verdict on
 * (host, address) must obey the rules whatever the bytes: deny wins, so a
 * host on the deny list is never OK; an empty allow list adds nothing; and
 * a list that matches must match again after a second parse (no state
 * leaks between calls).  A failed parse must leave an empty list.  A
 * canonical host (hostlist_canon()) is its own canonical form.  Leaks
 * are caught by LeakSanitizer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Copies the next newline-terminated piece of data into a new string. */
static char *
piece(const uint8_t **data, size_t *size)
{
	const uint8_t *nl = memchr(*data, '\n', *size);
	size_t n = nl ? (size_t)(nl - *data) : *size;
	char *s = malloc(n + 1);

	if (s == NULL)
		abort();
	memcpy(s, *data, n);
	s[n] = '\0';
	*data += nl ? n + 1 : n;
	*size -= nl ? n + 1 : n;
	return s;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *list = piece(&data, &size), *host = piece(&data, &size);
	char *ip = piece(&data, &size), err[CV_ERRLEN], uh[512];
	char again_canon[512];
	struct hostlist hl, again, empty = {0};
	const char *a = ip[0] ? ip : NULL;

	if (hostlist_parse(&hl, list, err, sizeof(err)) == 0) {
		int m = hostlist_match(&hl, host, a);

		if (hostlist_parse(&again, list, err, sizeof(err)) != 0 ||
		    hostlist_match(&again, host, a) != m)
			abort();
		if (m &&
		    hostlist_check(&empty, &hl, host, a) != HOSTLIST_DENIED)
			abort();
		if (m && hostlist_check(&hl, &hl, host, a) != HOSTLIST_DENIED)
			abort();
		if (!m && hostlist_check(&empty, &hl, host, a) != HOSTLIST_OK)
			abort();
		if (m && hostlist_check(&hl, &empty, host, a) != HOSTLIST_OK)
			abort();
		hostlist_clear(&again);
	} else if (hl.n != 0 || hl.e != NULL)
		abort();
	hostlist_clear(&hl);
	if (hostlist_url_host(host, uh, sizeof(uh)) == 0 &&
	    (uh[0] == '\0' || strlen(uh) >= sizeof(uh)))
		abort();
	/* a canonical host is its own canonical form */
	if (hostlist_canon(host, uh, sizeof(uh)) == 0 &&
	    (hostlist_canon(uh, again_canon, sizeof(again_canon)) != 0 ||
	        strcmp(uh, again_canon) != 0))
		abort();
	free(list);
	free(host);
	free(ip);
	return 0;
}
