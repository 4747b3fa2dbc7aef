/*
 * cvtest.h: what every Check suite of cronvisor shares: running a suite
 * with the exit status CTest reads.
 */
#ifndef CVTEST_H
#define CVTEST_H

#include <check.h>
#include <stdlib.h>

/*
 * Runs the suite in Check's forking mode, honouring CK_VERBOSITY, and
 * returns the process exit status: 0 only if every test passed.
 */
static inline int
cvtest_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
