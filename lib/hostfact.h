/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Host files that every fy_prepare reads (the public /etc databases, the
 * listing of /etc), kept between prepares while they are unchanged
 * (hostfact.c says how "unchanged" is decided). Core; thread-safe. */
#ifndef FY_HOSTFACT_H
#define FY_HOSTFACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HOSTFACT_NAME_MAX 64 /* a listed name's size, its NUL included */

/* The text of the regular host file at path (at most max bytes, as
 * util_read_fd reads it): a copy the caller frees, or NULL. */
char *hostfact_text(const char *path, size_t max);

/* The names of dir's entries that want accepts (each shorter than
 * HOSTFACT_NAME_MAX), sorted by strcmp, at most max of them; how many. */
size_t hostfact_names(const char *dir, bool (*want)(const char *name), char (*names)[HOSTFACT_NAME_MAX],
                      size_t max);

/* For the unit tests: how many reads were kept and how many calls were
 * answered from what was kept, since the process started. */
void hostfact_counts(uint64_t *kept, uint64_t *served);
/* For the unit tests: seconds added to the clock the settled rule reads
 * (a positive offset makes files just written look settled). */
void hostfact_test_clock(int64_t offset_sec);

#endif
