/*
 * fuzz_redisurl.c: libFuzzer target for redis_url_parse() (common/redis.c).
 * Whatever the bytes: a URL that parses has a port of 1-65535, a
 * database of 0-99999, every field NUL-terminated within its buffer, and
 * either an absolute socket path (unix://) or a host; one that fails says
 * why.  Parsing twice gives the same result.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *url = malloc(size + 1), err[CV_ERRLEN] = "";
	struct redis_url u, again;
	int rc;

	if (url == NULL)
		abort();
	memcpy(url, data, size);
	url[size] = '\0';
	rc = redis_url_parse(url, &u, err, sizeof(err));
	if (rc != redis_url_parse(url, &again, err, sizeof(err)) ||
	    memcmp(&u, &again, sizeof(u)) != 0)
		abort();
	if (rc == 0) {
		if (u.port < 1 || u.port > 65535 || u.db < 0 || u.db > 99999 ||
		    memchr(u.host, '\0', sizeof(u.host)) == NULL ||
		    memchr(u.path, '\0', sizeof(u.path)) == NULL ||
		    memchr(u.user, '\0', sizeof(u.user)) == NULL ||
		    memchr(u.password, '\0', sizeof(u.password)) == NULL)
			abort();
		if (u.is_unix ? u.path[0] != '/' : u.host[0] == '\0')
			abort();
	} else if (rc != -1 || err[0] == '\0')
		abort();
	free(url);
	return 0;
}
