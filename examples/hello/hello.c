/* The bundled example workload: built and run inside a sandbox by
 * scripts/demo.sh. It also reports what it can see of the host. */
#include <stdio.h>
#include <unistd.h>

int main(void) {
    printf("hello from the sandbox: uid %d, pid %d\n", (int)getuid(), (int)getpid());
    printf("host /etc/shadow visible: %s\n", access("/etc/shadow", F_OK) == 0 ? "yes" : "no");
    printf("network interfaces: %s\n", access("/proc/net/dev", R_OK) == 0 ? "see /proc/net/dev" : "unknown");
    return 0;
}
