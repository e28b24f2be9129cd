/* Rootless restricted through the library's API, started from a thread
 * that ends before the workload uses the network (run by
 * test-net-rootless.sh as uid 65534 in its caller namespace): pasta must
 * outlive the thread that called fy_start (it is the attempt's relay
 * thread's child, and PR_SET_PDEATHSIG follows the thread that forked).
 * The workload waits, then reaches the allowed destination; exit 0 when
 * it did and the result witnesses pasta's end at cleanup.
 *
 *   test-net-thread PROBE_DIR */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <forgeyard/sandbox.h>

static const char *probe_dir;
static fy_handle *handle;
static int start_rc = -1;

static void *starter(void *arg) {
    (void)arg;
    fy_policy *p = NULL;
    fy_error *e = NULL;
    fy_prepared *pr = NULL;
    const char *argv[] = {"/bin/sh", "-c", "sleep 1; /opt/fyprobe/fy-netprobe tcp 198.51.100.1 8080", NULL};
    int r = fy_policy_new(FY_PROFILE_STANDARD_CI, &p, &e);
    if (r >= 0)
        r = fy_policy_add_destination(p, "198.51.100.1", FY_PROTO_TCP, 8080, 8080, &e);
    if (r >= 0)
        r = fy_policy_set_network(p, FY_NET_RESTRICTED, &e);
    if (r >= 0)
        r = fy_policy_add_bind(p, probe_dir, "/opt/fyprobe", FY_BIND_READ_ONLY, &e);
    if (r >= 0)
        r = fy_prepare(p, NULL, argv, &pr, &e);
    if (r >= 0)
        r = fy_start(pr, &handle, &e);
    if (r < 0)
        printf("start: %s\n", fy_error_message(e));
    start_rc = r;
    fy_error_free(e);
    fy_prepared_free(pr);
    fy_policy_free(p);
    return NULL; /* the thread that called fy_start ends here */
}

int main(int argc, char **argv) {
    if (argc != 2)
        return 2;
    probe_dir = argv[1];
    pthread_t t;
    if (pthread_create(&t, NULL, starter, NULL) != 0 || pthread_join(t, NULL) != 0 || start_rc < 0)
        return 1;
    fy_result *res = NULL;
    if (fy_handle_wait(handle, FY_UNLIMITED, &res, NULL) != 1)
        return 1;
    char *json = NULL;
    int code = fy_result_exit_code(res);
    (void)fy_result_to_json(res, &json, NULL);
    int witnessed = json && strstr(json, "\"end\": \"killed at cleanup\"") && strstr(json, "nftables-userns-pasta");
    printf("exit %d witnessed %d\n", code, witnessed);
    if (!witnessed && json)
        printf("%s\n", json);
    free(json);
    fy_result_free(res);
    fy_handle_free(handle);
    return code == 0 && witnessed ? 0 : 1;
}
