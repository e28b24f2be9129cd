/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Public entry points: the qualification suite and its report. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "backend.h"
#include "policy.h"
#include "qualify.h"

struct qualify_probe {
    char *id, *summary;
    bool passed;
};

struct fy_qualify_report {
    bool passed;
    size_t n;
    struct qualify_probe *probes;
    char *json;  /* rendered once: the report is immutable */
};

void fy_qualify_report_free(fy_qualify_report *r) {
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->probes[i].id);
        free(r->probes[i].summary);
    }
    free(r->probes);
    free(r->json);
    free(r);
}

/* What a suite may use of a policy beyond the public API (backend.h). */
fy_policy *qualify_policy_copy(const fy_policy *p) { return policy_dup(p); }
void qualify_inject_delay(fy_policy *p, uint32_t stage, uint64_t usec) { policy_inject_delay(p, stage, usec); }
const char *qualify_profile_name(const fy_policy *p) { return fy_profile_name(p->profile); }

/* The suite of the first compiled-in folder that has one. */
int qualify_run(const fy_policy *policy, uint32_t groups, const char *tmp_parent, const char *const *plant_dirs,
                json_t **ret, fy_error **reterr) {
    if (ret)
        *ret = NULL;
    if (policy && policy->origin_pid != util_getpid())
        return err_set(reterr, FY_E_FORKED, FY_STEP_NONE, 0, NULL, "policy was created in another process");
    for (size_t f = 0; backend_families[f]; f++)
        if (backend_families[f]->qualify)
            return backend_families[f]->qualify(policy, groups, tmp_parent, plant_dirs, ret, reterr);
    if (ret)
        *ret = NULL;
    return err_set(reterr, FY_E_UNSUPPORTED, FY_STEP_NONE, 0, NULL,
                   "no backend in this build has a qualification suite (the Linux backend has)");
}

int fy_qualify(const fy_policy *policy, uint64_t flags, fy_qualify_report **ret, fy_error **reterr) {
    if (!ret)
        return err_set(reterr, FY_E_INVAL, FY_STEP_NONE, 0, NULL, "ret is NULL");
    *ret = NULL;
    if (flags)
        return err_set(reterr, FY_E_INVAL, FY_STEP_NONE, 0, NULL, "reserved flags set");
    json_t *root = NULL;
    int r = qualify_run(policy, 0, NULL, NULL, &root, reterr);
    if (r < 0)
        return r;
    fy_qualify_report *rep = calloc(1, sizeof(*rep));
    json_t *probes = json_object_get(root, "probes");
    size_t n = json_array_size(probes);
    if (rep)
        rep->probes = calloc(n ? n : 1, sizeof(*rep->probes));
    if (!rep || !rep->probes)
        goto oom;
    rep->passed = json_is_true(json_object_get(root, "passed"));
    for (size_t i = 0; i < n; i++, rep->n++) {
        json_t *p = json_array_get(probes, i);
        rep->probes[i].id = util_strdup(json_string_value(json_object_get(p, "id")));
        rep->probes[i].summary = util_strdup(json_string_value(json_object_get(p, "summary")));
        rep->probes[i].passed = json_is_true(json_object_get(p, "passed"));
        if (!rep->probes[i].id || !rep->probes[i].summary) {
            rep->n++;
            goto oom;
        }
    }
    if (!(rep->json = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER)))
        goto oom;
    json_decref(root);
    *ret = rep;
    return 0;
oom:
    json_decref(root);
    fy_qualify_report_free(rep);
    return err_set(reterr, FY_E_NOMEM, FY_STEP_NONE, 0, NULL, "out of memory");
}

int fy_qualify_passed(const fy_qualify_report *r) { return r && r->passed ? 1 : 0; }

int fy_qualify_to_json(const fy_qualify_report *r, char **ret_json, fy_error **reterr) {
    if (!r || !ret_json)
        return err_set(reterr, FY_E_INVAL, FY_STEP_JSON, 0, NULL, "report or ret_json is NULL");
    if (!(*ret_json = util_strdup(r->json)))
        return err_set(reterr, FY_E_NOMEM, FY_STEP_JSON, 0, NULL, "out of memory");
    return 0;
}

int fy_qualify_probe_count(const fy_qualify_report *r) { return r ? (int)r->n : FY_E_INVAL; }

const char *fy_qualify_probe_id(const fy_qualify_report *r, uint32_t index) {
    return r && index < r->n ? r->probes[index].id : NULL;
}

int fy_qualify_probe_passed(const fy_qualify_report *r, uint32_t index) {
    if (!r)
        return FY_E_INVAL;
    return index < r->n ? (r->probes[index].passed ? 1 : 0) : FY_E_RANGE;
}

const char *fy_qualify_probe_summary(const fy_qualify_report *r, uint32_t index) {
    return r && index < r->n ? r->probes[index].summary : NULL;
}
