/*
 * clock.c: the clocks every process reads, in one place.  The monotonic
 * clock times waits, deadlines and durations (it never jumps); the
 * real-time clock says when something happened or is due.
 */
#include <time.h>

#include "cronvisor.h"

static int64_t
clock_read_us(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* CLOCK_MONOTONIC in milliseconds. */
int64_t
clock_ms(void)
{
	return clock_read_us(CLOCK_MONOTONIC) / 1000;
}

/* CLOCK_MONOTONIC in microseconds. */
int64_t
clock_us(void)
{
	return clock_read_us(CLOCK_MONOTONIC);
}

/* CLOCK_REALTIME in microseconds since the epoch. */
int64_t
clock_real_us(void)
{
	return clock_read_us(CLOCK_REALTIME);
}
