/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The net suite's C tests: a check that reports and goes on (each test
 * prints every failure, then exits 1 when any failed). One per program. */
#ifndef FY_TEST_NET_CHECK_H
#define FY_TEST_NET_CHECK_H

#include <stdio.h>

static int failed;
#define CHECK(c, ...)                                                   \
    do {                                                                \
        if (!(c)) {                                                     \
            printf("FAIL: %s:%d: ", __FILE__, __LINE__);                \
            printf(__VA_ARGS__);                                        \
            printf("\n");                                               \
            failed = 1;                                                 \
        }                                                               \
    } while (0)

#endif
