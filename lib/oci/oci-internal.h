/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the files of lib/oci/ share. */
#ifndef FY_OCI_INTERNAL_H
#define FY_OCI_INTERNAL_H

#include "linux-syscall.h"
#include "oci.h"

struct archive;

/* An opened image source: the layout directory (O_PATH) or the archive. */
struct oci_src {
    const struct oci_ref *ref;
    int fd;
};
int oci_src_open(struct oci_src *src, const struct oci_ref *ref, fy_error **reterr);
void oci_src_close(struct oci_src *src);
/* The whole of a file of the source (a layout path or an archive member) of
 * at most max bytes, NUL-terminated. */
int oci_src_read(struct oci_src *src, const char *name, size_t max, char **ret, size_t *retlen,
                 fy_error **reterr);
int oci_resolve_src(struct oci_src *src, struct oci_image **ret, fy_error **reterr);

/* A plain-tar reader over its own dup of fd; positioned on a member by
 * oci_archive_seek (0 or FY_E_NOTFOUND). */
struct archive *oci_archive_new_outer(int fd, fy_error **reterr);
void oci_archive_free_outer(struct archive *a);
int oci_archive_seek(struct archive *a, const char *name);

void oci_digest_hex(const unsigned char h[32], char out[OCI_DIGEST_LEN + 1]);

#endif
