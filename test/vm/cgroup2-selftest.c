/*
 * Runs inside the test guest (test/vm/run-in-guest.sh) and checks that the
 * guest gives the cgroup v2 tests what they are promised:
 *   - /sys/fs/cgroup is a cgroup2 mount and no cgroup v1 hierarchy exists;
 *   - FY_TEST_CGROUP names a cgroup offering memory, pids, cpu and io, with
 *     all four enabled for its children;
 *   - a child created under it gets memory.max, pids.max, cpu.max, io.max,
 *     and limits written there read back;
 *   - a process in a child with pids.max=5 cannot fork beyond it (EAGAIN,
 *     pids.events "max" counted);
 *   - a process in a child with memory.max=32M that touches 96 MiB is killed
 *     by the OOM killer (memory.events oom_kill counted).
 * Prints one line per check and "N passed, N failed"; exits 0 when all pass.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

static int passed, failed;

__attribute__((format(printf, 2, 3))) static void check(int ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s - ", ok ? "ok" : "FAIL");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	if (ok)
		passed++;
	else
		failed++;
}

/* Reads a small file into buf (NUL-terminated, trailing newline dropped). */
static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	int saved = errno;
	close(fd);
	if (n < 0) {
		errno = saved;
		return -1;
	}
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, val, strlen(val));
	int saved = errno;
	close(fd);
	if (n < 0) {
		errno = saved;
		return -1;
	}
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

static int has_word(const char *list, const char *word)
{
	size_t wl = strlen(word);
	for (const char *p = list; (p = strstr(p, word)) != NULL; p += wl) {
		int start = p == list || p[-1] == ' ';
		int end = p[wl] == '\0' || p[wl] == ' ' || p[wl] == '\n';
		if (start && end)
			return 1;
	}
	return 0;
}

/* Value of "key N" in a flat-keyed file such as pids.events; -1 when absent. */
static long keyed(const char *path, const char *key)
{
	char buf[1024];
	if (read_file(path, buf, sizeof buf) < 0)
		return -1;
	size_t kl = strlen(key);
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
		if (strncmp(line, key, kl) == 0 && line[kl] == ' ')
			return strtol(line + kl + 1, NULL, 10);
	return -1;
}

static void path_of(char *out, size_t len, const char *dir, const char *file)
{
	snprintf(out, len, "%s/%s", dir, file);
}

/* Child body: join cgroup dir, fork until refused; report successes through
 * the exit status (0..100) or 200+ on a setup error. */
static int fork_until_refused(const char *cg)
{
	char p[512];
	path_of(p, sizeof p, cg, "cgroup.procs");
	if (write_file(p, "0") < 0)
		return 201;
	int gate[2];
	if (pipe(gate) < 0)
		return 202;
	int forks = 0, err = 0;
	pid_t kids[100];
	while (forks < 100) {
		pid_t pid = fork();
		if (pid < 0) {
			err = errno;
			break;
		}
		if (pid == 0) {
			char c;
			close(gate[1]);
			while (read(gate[0], &c, 1) < 0 && errno == EINTR)
				;
			_exit(0);
		}
		kids[forks++] = pid;
	}
	close(gate[1]);
	for (int i = 0; i < forks; i++)
		waitpid(kids[i], NULL, 0);
	if (err != EAGAIN)
		return 203;
	return forks;
}

/* Child body: join cgroup dir, touch `mib` MiB; exits 0 if it survives. */
static int touch_memory(const char *cg, size_t mib)
{
	char p[512];
	path_of(p, sizeof p, cg, "cgroup.procs");
	if (write_file(p, "0") < 0)
		return 201;
	size_t len = mib << 20;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 202;
	for (size_t off = 0; off < len; off += 4096)
		m[off] = 1;
	return 0;
}

int main(void)
{
	char buf[4096], p[512];
	struct statfs sfs;

	/* 1. pure cgroup v2 */
	memset(&sfs, 0, sizeof sfs);
	int sr = statfs("/sys/fs/cgroup", &sfs);
	check(sr == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC, "/sys/fs/cgroup is cgroup2 (f_type 0x%lx)",
	      (unsigned long)sfs.f_type);
	int v1 = 0;
	FILE *mounts = fopen("/proc/self/mounts", "re");
	if (mounts) {
		char line[1024];
		while (fgets(line, sizeof line, mounts))
			if (strstr(line, " cgroup ") != NULL)
				v1 = 1;
		fclose(mounts);
	}
	check(mounts != NULL && !v1, "no cgroup v1 hierarchy is mounted");
	buf[0] = '\0';
	int cr = read_file("/proc/self/cgroup", buf, sizeof buf);
	check(cr == 0 && strcmp(buf, "0::/runner") == 0,
	      "/proc/self/cgroup is the single v2 line \"0::/runner\" (got \"%s\")", buf);

	/* 2. FY_TEST_CGROUP */
	const char *base = getenv("FY_TEST_CGROUP");
	check(base && strcmp(base, "/sys/fs/cgroup/forgeyard-tests") == 0,
	      "FY_TEST_CGROUP=%s", base ? base : "(unset)");
	if (!base) {
		printf("%d passed, %d failed\n", passed, failed);
		return 1;
	}
	path_of(p, sizeof p, base, "cgroup.controllers");
	buf[0] = '\0';
	read_file(p, buf, sizeof buf);
	check(has_word(buf, "memory") && has_word(buf, "pids") && has_word(buf, "cpu") && has_word(buf, "io"),
	      "%s offers memory pids cpu io (\"%s\")", p, buf);
	path_of(p, sizeof p, base, "cgroup.subtree_control");
	buf[0] = '\0';
	read_file(p, buf, sizeof buf);
	check(has_word(buf, "memory") && has_word(buf, "pids") && has_word(buf, "cpu") && has_word(buf, "io"),
	      "%s enables memory pids cpu io for children (\"%s\")", p, buf);
	path_of(p, sizeof p, base, "cgroup.procs");
	buf[0] = 'x';
	int pr = read_file(p, buf, sizeof buf);
	check(pr == 0 && buf[0] == '\0', "%s holds no process", p);

	/* 3. a child gets the interface files; limits read back */
	char child[256];
	snprintf(child, sizeof child, "%s/selftest-%d", base, (int)getpid());
	int mr = mkdir(child, 0755);
	check(mr == 0, "mkdir %s%s%s", child, mr ? ": " : "", mr ? strerror(errno) : "");
	static const char *const files[] = {"memory.max", "memory.high", "memory.events", "pids.max",
					    "pids.events", "cpu.max", "cpu.weight", "io.max"};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		struct stat st;
		path_of(p, sizeof p, child, files[i]);
		check(stat(p, &st) == 0, "child has %s", files[i]);
	}
	static const struct { const char *file, *write, *expect; } limits[] = {
		{"memory.max", "64M", "67108864"},
		{"memory.max", "max", "max"},
		{"pids.max", "5", "5"},
		{"cpu.max", "50000 100000", "50000 100000"},
		{"cpu.weight", "50", "50"},
	};
	for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
		path_of(p, sizeof p, child, limits[i].file);
		int w = write_file(p, limits[i].write);
		int werr = errno;
		buf[0] = '\0';
		read_file(p, buf, sizeof buf);
		check(w == 0 && strcmp(buf, limits[i].expect) == 0, "%s: write \"%s\" reads back \"%s\" (got \"%s\"%s%s)",
		      limits[i].file, limits[i].write, limits[i].expect, buf, w ? ", write: " : "",
		      w ? strerror(werr) : "");
	}

	/* 4. pids.max=5: the member plus 4 forks, then EAGAIN */
	path_of(p, sizeof p, child, "pids.max");
	write_file(p, "5");
	pid_t pid = fork();
	if (pid == 0)
		_exit(fork_until_refused(child));
	int status = 0;
	waitpid(pid, &status, 0);
	int forks = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	check(forks == 4, "pids.max=5: 4 forks succeed, the 5th fails with EAGAIN (forks=%d, status 0x%x)", forks,
	      status);
	path_of(p, sizeof p, child, "pids.events");
	long maxev = keyed(p, "max");
	check(maxev >= 1, "pids.events counts the refused fork (max %ld)", maxev);

	/* 5. memory.max=32M: touching 96 MiB gets the process OOM-killed */
	char memcg[300];
	snprintf(memcg, sizeof memcg, "%s/mem", child);
	path_of(p, sizeof p, child, "pids.max");
	write_file(p, "max");
	path_of(p, sizeof p, child, "cgroup.subtree_control");
	int sc = write_file(p, "+memory");
	int mc = sc == 0 ? mkdir(memcg, 0755) : -1;
	check(sc == 0 && mc == 0, "nested cgroup %s with memory enabled", memcg);
	path_of(p, sizeof p, memcg, "memory.max");
	write_file(p, "32M");
	path_of(p, sizeof p, memcg, "memory.swap.max");
	write_file(p, "0");
	pid = fork();
	if (pid == 0)
		_exit(touch_memory(memcg, 96));
	waitpid(pid, &status, 0);
	check(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "memory.max=32M: touching 96 MiB is OOM-killed (status 0x%x)",
	      status);
	path_of(p, sizeof p, memcg, "memory.events");
	long oom = keyed(p, "oom_kill");
	check(oom >= 1, "memory.events counts the OOM kill (oom_kill %ld)", oom);

	/* 6. a nanosleep takes about as long as asked, by the guest's clock */
	struct timespec a, b, d = {0, 200 * 1000 * 1000};
	clock_gettime(CLOCK_MONOTONIC, &a);
	nanosleep(&d, NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	check(ms >= 200 && ms < 2000, "nanosleep(200 ms) took %.1f ms", ms);

	/* cleanup: emptied cgroups can be removed */
	int rm1 = rmdir(memcg), rm2 = rmdir(child);
	check(rm1 == 0 && rm2 == 0, "rmdir the emptied test cgroups");

	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
