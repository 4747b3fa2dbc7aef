/*
 * fuzz_result.c: libFuzzer target for the result frame of common/result.c.
 * The first input byte picks a chunk size (0: everything at once); the rest
 * is the byte stream a runner wrote to its result pipe, fed to a
 * result_reader in chunks of that size the way the supervisor feeds what
 * it reads.  The same bytes are also given to result_decode() directly,
 * both whole and past the 4-byte length.  Beyond "no crash, no leak, no
 * allocation sized by the input" (run with -malloc_limit_mb), it checks
 * that the reader agrees with the direct decoder, and that every result
 * that decodes encodes and decodes back to itself; it aborts otherwise.
 *
 * clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Icommon \
 *     tests/fuzz/fuzz_result.c common/result.c common/log.c \
 *     $(pkg-config --cflags --libs msgpack)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
same(const struct result *a, const struct result *b)
{
	if (a->status != b->status || a->exit_code != b->exit_code ||
	    a->signal != b->signal || a->http_status != b->http_status ||
	    a->duration_us != b->duration_us ||
	    a->cpu_user_us != b->cpu_user_us ||
	    a->cpu_sys_us != b->cpu_sys_us || a->max_rss_kb != b->max_rss_kb ||
	    a->retryable != b->retryable || a->output_len != b->output_len)
		return 0;
	if (a->output_len > 0 &&
	    memcmp(a->output, b->output, a->output_len) != 0)
		return 0;
	if (a->error == NULL || b->error == NULL)
		return a->error == b->error;
	return strcmp(a->error, b->error) == 0;
}

/* A decoded result must survive encode and decode unchanged. */
static void
check_round_trip(const struct result *r)
{
	struct result back;
	unsigned char *buf;
	size_t len, n;
	char err[CV_ERRLEN];

	if (result_encode(r, &buf, &len) == -1)
		abort(); /* everything the decoder accepts must encode */
	n = (size_t)buf[0] << 24 | (size_t)buf[1] << 16 | (size_t)buf[2] << 8 |
	    buf[3];
	if (n != len - 4 || n > RESULT_FRAME_MAX)
		abort();
	if (result_decode(buf + 4, n, &back, err, sizeof(err)) == -1)
		abort();
	if (!same(r, &back))
		abort();
	result_clear(&back);
	free(buf);
}

/* Decodes p as a payload; on success checks the round trip. */
static void
check_decode(const uint8_t *p, size_t len)
{
	struct result r;
	char err[CV_ERRLEN] = "";

	if (result_decode(p, len, &r, err, sizeof(err)) == 0) {
		check_round_trip(&r);
		result_clear(&r);
	} else if (r.output != NULL || r.error != NULL || err[0] == '\0')
		abort();
}

/*
 * Feeds s in chunks of chunk bytes.  Returns 1 (with *out set) if the
 * reader decoded a frame, else 0.
 */
static int
feed(const uint8_t *s, size_t len, size_t chunk, struct result *out)
{
	struct result_reader rd;
	char err[CV_ERRLEN];
	size_t off = 0, n, used;
	int rc = 0, done = 0;

	result_reader_init(&rd);
	while (off < len && rc != -1) {
		n = len - off < chunk ? len - off : chunk;
		rc = result_reader_feed(
		    &rd, s + off, n, &used, out, err, sizeof(err));
		if (used > n || (rc == 0 && used != n))
			abort();
		if (rc == 1)
			done = 1;
		off += used;
	}
	if (done && (off < len) != (rc == -1))
		abort(); /* data after the frame must be refused */
	if (rc == 0 && result_reader_eof(&rd, err, sizeof(err)) == 1)
		abort(); /* a frame that needed more cannot be complete */
	if (rd.state != RESULT_READER_PAYLOAD && rd.buf != NULL)
		abort();
	result_reader_clear(&rd);
	return done;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct result got, want;
	char err[CV_ERRLEN];
	size_t chunk, n;

	if (size < 1)
		return 0;
	chunk = data[0] == 0 ? SIZE_MAX : data[0];
	data++;
	size--;
	check_decode(data, size);
	if (size > 4)
		check_decode(data + 4, size - 4);
	if (!feed(data, size, chunk, &got))
		return 0;
	/* The reader decoded exactly the payload the length announced. */
	n = (size_t)data[0] << 24 | (size_t)data[1] << 16 |
	    (size_t)data[2] << 8 | data[3];
	if (n == 0 || n > RESULT_FRAME_MAX || n > size - 4)
		abort();
	if (result_decode(data + 4, n, &want, err, sizeof(err)) == -1)
		abort();
	if (!same(&got, &want))
		abort();
	result_clear(&want);
	result_clear(&got);
	return 0;
}
