/*
 * io.c: the EINTR and short-transfer loops, kept here so that no call site
 * repeats them.  Everything returns 0/-1 with errno set, or a byte count for
 * read-like calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cronvisor.h"

/*
 * Reads up to len bytes, retrying after EINTR and after short reads until
 * len bytes arrived or end of file.  Returns the bytes read (less than len
 * only at end of file, 0 at once at end of file), or -1 with errno set.
 * A non-blocking descriptor that has nothing more returns what it has, or
 * -1/EAGAIN if it had nothing.
 */
ssize_t
io_read(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN && got > 0)
				break;
			return -1;
		}
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/*
 * Writes all len bytes, retrying after EINTR and short writes.  Returns 0,
 * or -1 with errno set (EPIPE when the reader went away: the caller must
 * ignore SIGPIPE).
 */
int
io_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Reads from fd into a buffer grown from hint + 1 bytes until end of file
 * or until more than max bytes came: the size fstat() gave is only a hint,
 * since the file may change after it and files under /proc report 0.
 * Sets *buf and *len (a NUL is appended, not counted) and returns 0, or
 * returns -1 with errno set (EFBIG: more than max bytes).
 */
static int
io_read_grow(int fd, size_t hint, size_t max, unsigned char **buf, size_t *len)
{
	unsigned char *p = NULL, *q;
	size_t cap, got = 0;
	ssize_t n;

	/* No buffer can be that large, and max + 2 must not wrap around. */
	if (max > SIZE_MAX / 2)
		max = SIZE_MAX / 2;
	cap = (hint < max ? hint : max) + 1;
	for (;;) {
		if ((q = realloc(p, cap + 1)) == NULL)
			goto fail;
		p = q;
		if ((n = io_read(fd, p + got, cap - got)) == -1)
			goto fail;
		got += (size_t)n;
		if (got < cap)
			break; /* end of file */
		if (got > max) {
			errno = EFBIG;
			goto fail;
		}
		cap = cap <= max / 2 ? cap * 2 : max + 1;
	}
	p[got] = '\0';
	*buf = p;
	*len = got;
	return 0;
fail:
	free(p);
	return -1;
}

/*
 * Reads a whole regular file of at most max bytes into a new buffer that
 * the caller frees; a NUL byte is appended (not counted in *len) so text
 * files can be used as strings.  Returns 0, or -1 with errno set: EFBIG when
 * the file is larger than max, EINVAL when it is not a regular file.  The
 * file is opened O_NONBLOCK so that a FIFO or a device is refused instead
 * of blocking the open; that flag means nothing to a regular file.
 */
int
io_read_file(const char *path, size_t max, unsigned char **buf, size_t *len)
{
	struct stat st;
	int fd, saved;

	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) ==
	    -1)
		return -1;
	if (fstat(fd, &st) == -1)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	if ((size_t)st.st_size > max) {
		errno = EFBIG;
		goto fail;
	}
	if (io_read_grow(fd, (size_t)st.st_size, max, buf, len) == -1)
		goto fail;
	close(fd);
	return 0;
fail:
	saved = errno;
	close(fd);
	errno = saved;
	return -1;
}

/*
 * Makes sure descriptors 0, 1 and 2 are open, on /dev/null if need be, so
 * that no file the process opens later lands on them and receives stray
 * output.  Aborts via fatal() if even /dev/null cannot be opened.
 */
void
io_fix_stdio(void)
{
	int fd;

	while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd <= 2)
		;
	if (fd < 0)
		fatal("open /dev/null");
	close(fd);
}
