/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the action document parser and its canonical form.
 *
 * For every input: parse it. A rejected document must come with an error
 * that names a JSON path. An accepted one is rendered canonically, parsed
 * again and rendered again: the renderings and the digests must be
 * identical (abort() otherwise).
 *
 * No processes, no files, no environment: only the input bytes. */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgeyard/sandbox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *a, const char *b) {
    fprintf(stderr, "fuzz-action: %s\n", what);
    if (a)
        fprintf(stderr, "--- first:\n%s\n", a);
    if (b)
        fprintf(stderr, "--- second:\n%s\n", b);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fy_action *a = NULL, *b = NULL;
    fy_error *err = NULL;
    if (fy_action_from_json((const char *)data, size, &a, &err) < 0) {
        if (a)
            fail("a refused document left an action", NULL, NULL);
        if (!err || !fy_error_location(err) || fy_error_location(err)[0] != '$')
            fail("a refused document without a JSON path", err ? fy_error_message(err) : "no error", NULL);
        fy_error_free(err);
        return 0;
    }
    char *j1 = NULL, *j2 = NULL, *d1 = NULL, *d2 = NULL;
    if (fy_action_to_json(a, &j1, NULL) < 0 || fy_action_digest(a, &d1, NULL) < 0)
        fail("an accepted action does not render", NULL, NULL);
    if (fy_action_from_json(j1, strlen(j1), &b, &err) < 0)
        fail("the canonical form is refused", j1, err ? fy_error_message(err) : NULL);
    if (fy_action_to_json(b, &j2, NULL) < 0 || fy_action_digest(b, &d2, NULL) < 0)
        fail("the re-read action does not render", j1, NULL);
    if (strcmp(j1, j2) != 0)
        fail("the canonical form is not stable", j1, j2);
    if (strcmp(d1, d2) != 0)
        fail("the digest is not stable", d1, d2);
    fy_free(j1); fy_free(j2); fy_free(d1); fy_free(d2);
    fy_action_free(a);
    fy_action_free(b);
    return 0;
}
