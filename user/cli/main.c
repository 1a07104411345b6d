// SPDX-License-Identifier: GPL-2.0
/*
 * main.c - liveprof's entry point: subcommands, checks before anything is
 * attached, the batch loop, and the one exit path.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>

#include "dwarf/debuginfo.h"
#include "user/session/bpf_caps.h"
#include "user/session/daemon.h"
#include "user/synth/emit.h"
#include "user/util/exit_codes.h"
#include "user/util/log.h"
#include "user/session/options.h"
#include "user/session/report.h"
#include "user/util/atomic_file.h"
#include <bpf/libbpf.h>
#include "user/session/split.h"
#include "user/session/traces.h"
#include "ui-tui/tui.h"
#include "user/serve/serve.h"
#include "user/session/alloc.h"
#include "user/util/util.h"
#include "user/cli/causal_cmd.h"

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static void install_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};

	/* No SA_RESTART: the poll must return so the loop sees the flag. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* Root, or both CAP_BPF and CAP_PERFMON (kernel >= 5.8). Say which is missing. */
static int check_privileges(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {0};
	bool bpf, perfmon;

	if (geteuid() == 0)
		return 0;
	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	bpf = data[1].effective & (1u << (39 - 32));	 /* CAP_BPF */
	perfmon = data[1].effective & (1u << (38 - 32)); /* CAP_PERFMON */
	if (bpf && perfmon)
		return 0;
	lp_err("insufficient privileges: run as root or grant %s%s%s", bpf ? "" : "CAP_BPF",
	       !bpf && !perfmon ? " and " : "", perfmon ? "" : "CAP_PERFMON");
	return -EPERM;
}

static bool is_split_dir(const char *path)
{
	struct stat st;
	size_t n = strlen(path);

	return (n && path[n - 1] == '/') || (!stat(path, &st) && S_ISDIR(st.st_mode));
}

/* Every output is checked before anything is attached. */
static int check_outputs(const struct options *o)
{
	for (int i = 0; i < o->n_outputs; i++) {
		const char *p = o->outputs[i];
		int err;

		if (is_split_dir(p)) {
			if (!o->split_spec) {
				lp_err("output '%s' is a directory: that needs --split", p);
				return EXIT_USAGE;
			}
			if (mkdir(p, 0755) && errno != EEXIST) {
				lp_err("cannot create '%s': %s", p, strerror(errno));
				return EXIT_OUTPUT;
			}
			if (access(p, W_OK)) {
				lp_err("cannot write to '%s': %s", p, strerror(errno));
				return EXIT_OUTPUT;
			}
			continue;
		}
		if (report__format_of(p) < 0) {
			lp_err("unknown output format '%s' (use .folded, .txt, .svg, .pb.gz or "
			       ".annotate)",
			       p);
			return EXIT_USAGE;
		}
		err = atomic_file__check_writable(p);
		if (err) {
			lp_err("cannot write '%s': %s", p, strerror(-err));
			return EXIT_OUTPUT;
		}
	}
	if (o->json_path) {
		int err = atomic_file__check_writable(o->json_path);

		if (err) {
			lp_err("cannot write '%s': %s", o->json_path, strerror(-err));
			return EXIT_OUTPUT;
		}
	}
	return 0;
}

/*
 * Start COMMAND stopped behind a pipe: it execs only once the BPF side is
 * attached, so its first instructions are profiled too. If exec fails the
 * child reports errno through a second (close-on-exec) pipe.
 */
static int launch(char **argv, int *go_fd, pid_t *pid_out)
{
	char path[PATH_MAX];
	int gate[2], status[2];
	struct stat st;
	pid_t pid;

	/* What exec refuses anyway (EACCES), refused before anything reads
	 * the command's file: an open() of a FIFO would wait for a writer. */
	if (!lp_path_search(argv[0], path, sizeof(path)) &&
	    (stat(path, &st) || !S_ISREG(st.st_mode)))
		return -EACCES;
	if (pipe2(gate, O_CLOEXEC) || pipe2(status, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char c;
		int e;

		close(gate[1]);
		close(status[0]);
		if (read(gate[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[0], argv);
		e = errno;
		if (write(status[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(gate[0]);
	close(status[1]);
	*go_fd = gate[1];
	*pid_out = pid;
	return status[0];
}

static int release(int go_fd, int status_fd, pid_t pid, const char *cmd)
{
	int e = 0;
	ssize_t n;

	if (write(go_fd, "g", 1) != 1)
		return -EIO;
	close(go_fd);
	n = read(status_fd, &e, sizeof(e));
	close(status_fd);
	if (n == sizeof(e)) {
		waitpid(pid, NULL, 0);
		lp_err("cannot run '%s': %s", cmd, strerror(e));
		return -e;
	}
	return 0;
}

/* The file execvp() will run for @cmd: PATH is searched like the shell does. */
static const char *resolve_command(const char *cmd, char *buf, size_t len)
{
	return lp_path_search(cmd, buf, len) ? NULL : buf;
}

static int setup_traces(struct daemon *d, struct options *o)
{
	char err[512];

	for (int i = 0; i < o->n_traces; i++) {
		if (daemon__trace(d, o->traces[i], i == 0 ? o->by_expr : NULL, err, sizeof(err)) <
		    0) {
			lp_err("%s", err);
			return EXIT_PROBE;
		}
	}
	if (o->split_spec) {
		char func[256];
		double pct;
		int r = split_spec_parse(o->split_spec, func, sizeof(func), &pct, err, sizeof(err));

		if (r) {
			lp_err("%s", err);
			return EXIT_USAGE;
		}
		r = daemon__split(d, o->split_spec, o->when_spec, o->n_traces ? NULL : o->by_expr,
				  err, sizeof(err));
		if (r) {
			lp_err("%s", err);
			return r == -ENOMEM ? EXIT_RUNTIME : EXIT_PROBE;
		}
	}
	return 0;
}

/*
 * How long to wait for events: until the daemon's next work of its own
 * (its tick, or sooner while it awaits something), the next print or the
 * end, whichever comes first; events wake the wait once a batch of them is
 * waiting.
 */
static int poll_timeout_ms(const struct daemon *d, uint64_t now, uint64_t next_print,
			   uint64_t deadline)
{
	uint64_t until = daemon__next_wake_ns(d, now);

	if (next_print && next_print < until)
		until = next_print;
	if (deadline && deadline < until)
		until = deadline;
	return until > now ? (int)((until - now + 999999) / 1000000) : 0;
}

static void batch_loop(struct daemon *d, const struct options *o)
{
	uint64_t deadline = o->duration_s ? d->core.start_ns + (uint64_t)(o->duration_s * 1e9) : 0;
	uint64_t next_print =
		o->interval_s ? d->core.start_ns + (uint64_t)(o->interval_s * 1e9) : 0;

	/* The traces asked for here and the off-CPU profile get the whole
	 * duration: it counts from when their programs, verified while the
	 * daemon samples, are attached. */
	bool wait_probes = deadline && (o->n_traces || o->split_spec || o->offcpu);

	while (!g_stop) {
		uint64_t now = lp_now_ns();
		/* a deadline that waits for the programs does not shorten the wait */
		int err = daemon__poll(d, poll_timeout_ms(d, now, next_print,
							  wait_probes && deadline <= now ? 0 : deadline));

		if (err && err != -EINTR) {
			lp_err("reading events: %s", strerror(-err));
			break;
		}
		if (d->load_error)
			break; /* printed */
		if (wait_probes && d->programs_done) {
			wait_probes = false;
			deadline = d->ready_ns + (uint64_t)(o->duration_s * 1e9);
		}
		now = lp_now_ns();
		/* not before those programs are in: on a slow machine (a TCG
		 * guest: 8 s to verify them) -d would end the run first */
		if (deadline && !wait_probes && now >= deadline)
			break;
		if (!daemon__targets_alive(d))
			break;
		if (next_print && now >= next_print) {
			next_print += (uint64_t)(o->interval_s * 1e9);
			report__print_interval(d, stdout);
		}
	}
}

static bool will_tui(const struct options *o)
{
	return !o->no_tui && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
}

/*
 * Whether @pid is a kernel thread (PF_KTHREAD in /proc/PID/stat's flags):
 * it has no user stack and no mappings, so a profile of it would be
 * silently empty. @comm gets its name.
 */
static bool is_kernel_thread(int pid, char *comm, size_t len)
{
	unsigned long flags = 0;
	const char *name, *rest;
	char buf[512];

	rest = lp_proc_stat(pid, buf, sizeof(buf), &name);
	if (!rest)
		return false;
	snprintf(comm, len, "%s", name);
	/* " state ppid pgrp session tty tpgid flags" */
	if (sscanf(rest, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
		return false;
	return flags & 0x00200000; /* PF_KTHREAD */
}

/* Checks that need nothing attached: outputs, privileges, the pids. */
static int preflight(const struct options *o)
{
	int rc = check_outputs(o);

	if (rc)
		return rc;
	if (check_privileges())
		return EXIT_PERMISSION;
	for (int i = 0; i < o->n_pids; i++) {
		char comm[32];

		if (kill(o->pids[i], 0) && errno == ESRCH) {
			lp_err("no such process '%d'", o->pids[i]);
			return EXIT_NO_TARGET;
		}
		if (is_kernel_thread(o->pids[i], comm, sizeof(comm))) {
			lp_err("'%d' is a kernel thread (%s): it has no user space to profile",
			       o->pids[i], comm);
			return EXIT_KTHREAD;
		}
	}
	return EXIT_OK;
}

/* Follow every target (the launched command too); an EXIT_* status. */
static int add_targets(struct daemon *d, struct options *o, pid_t child, char *exe, size_t exelen)
{
	d->core.child = child;
	if (child) {
		d->child_exe = resolve_command(o->command[0], exe, exelen);
		o->pids[o->n_pids++] = child;
	}
	for (int i = 0; i < o->n_pids; i++) {
		int err = daemon__add_target(d, o->pids[i]);

		if (err) {
			lp_err("cannot follow process '%d': %s", o->pids[i], strerror(-err));
			return EXIT_RUNTIME;
		}
	}
	return EXIT_OK;
}

/* --http: the server runs in the daemon's loop until serve__stop(). */
static int start_http(struct daemon *d, const struct options *o, struct serve **http)
{
	struct serve_opts so = {.addr = o->http_addr, .token_file = o->http_token};
	int err;

	if (!o->http_addr)
		return EXIT_OK;
	err = serve__start(http, d, &so);
	if (err)
		return err == -EINVAL || err == -EACCES ? EXIT_USAGE : EXIT_RUNTIME;
	return EXIT_OK;
}

/*
 * A launched command waits on a pipe until everything is attached; the
 * gate is @go_fd. Ends it (like timeout(1) would) when the run ends before
 * it did, also on failure.
 */
static void end_child(struct daemon *d, pid_t child, int *go_fd, int *status_fd)
{
	if (*go_fd >= 0)
		close(*go_fd); /* the gated child reads EOF and exits */
	if (*status_fd >= 0)
		close(*status_fd);
	*go_fd = *status_fd = -1;
	if (child && !d->child_exited) {
		kill(child, SIGTERM);
		waitpid(child, NULL, 0);
	}
}

/* --alloc: the allocator probes in every target, before the child runs. */
static int start_alloc(struct daemon *d, const struct options *o)
{
	char msg[512];

	if (!o->alloc)
		return EXIT_OK;
	if (daemon__alloc_start(d, o->alloc_rate_bytes, msg, sizeof(msg))) {
		lp_err("%s", msg);
		return EXIT_PROBE;
	}
	return EXIT_OK;
}

static int run(struct options *o)
{
	struct serve *http = NULL;
	struct daemon d;
	int go_fd = -1, status_fd = -1, rc;
	pid_t child = 0;
	char child_exe[4096];

	memset(&d, 0, sizeof(d));
	/* First: a Ctrl-C while BPF loads must end the run cleanly, with the
	 * profile written, and an inherited SIG_IGN must not stop it. */
	install_signals();
	rc = preflight(o);
	if (rc)
		return rc;
	if (o->command) {
		status_fd = launch(o->command, &go_fd, &child);
		if (status_fd < 0) {
			lp_err("cannot start '%s': %s", o->command[0], strerror(-status_fd));
			return EXIT_NO_TARGET;
		}
	}
	/* The TUI and the HTTP server may add traces at any time. */
	rc = daemon__open(&d, o, will_tui(o) || o->http_addr);
	if (!rc)
		rc = add_targets(&d, o, child, child_exe, sizeof(child_exe));
	if (!rc)
		rc = daemon__start(&d);
	if (!rc)
		rc = setup_traces(&d, o);
	if (!rc)
		rc = start_alloc(&d, o);
	/* a launched command runs once its probes are attached */
	if (!rc && child && daemon__programs_ready(&d, true) < 0)
		rc = EXIT_BPF;
	if (!rc && child) {
		rc = release(go_fd, status_fd, child, o->command[0]) ? EXIT_NO_TARGET : EXIT_OK;
		go_fd = status_fd = -1;
		if (rc)
			child = d.core.child = 0;
	}
	if (!rc)
		rc = start_http(&d, o, &http);
	if (!rc) {
		if (!will_tui(o) || tui_run(&d, &g_stop) == -ENOTTY)
			batch_loop(&d, o);
		serve__stop(http);
		http = NULL;
		daemon__finish(&d);
		rc = d.load_error ? EXIT_BPF : report__finish(&d, stdout);
	}
	end_child(&d, child, &go_fd, &status_fd);
	serve__stop(http);
	daemon__close(&d);
	return rc;
}

/*
 * `liveprof serve`: the long-running form of --http. No terminal UI and no
 * table at exit; loopback port 6060 unless --http says otherwise.
 */
static void serve_defaults(struct options *o)
{
	o->serve = true;
	o->no_tui = true;
	o->top_rows = 0;
	if (!o->http_addr)
		o->http_addr = "127.0.0.1:6060";
}

/*
 * Blocks of 256 KB and more are mappings of their own. glibc's default
 * threshold rises with every such block freed, so the daemon's per-stack
 * arrays, doubled by realloc(), soon lived in the heap, where growing one
 * copies it into fresh pages: a fixed threshold keeps them mappings that
 * realloc() moves by remapping. On bench_deep (every sample a new stack):
 * page faults per sample 0.058 -> 0.050, RSS growth per sample 236 ->
 * 177 bytes, CPU per sample 0.93 -> 0.86 and 0.92 -> 0.90 us (medians of
 * two runs of 6 alternated pairs).
 */
#define MMAP_THRESHOLD (256 << 10)

int main(int argc, char **argv)
{
	struct options o;
	int r;

	mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
	if (argc > 1 && !strcmp(argv[1], "--check"))
		return lp_check_kernel(stdout, argc > 2 && (!strcmp(argv[2], "-v") ||
							    !strcmp(argv[2], "--verbose")));
	if (argc > 1 && !strcmp(argv[1], "emit"))
		return cmd_emit(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "causal"))
		return cmd_causal(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "validate"))
		return cmd_validate(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "serve")) {
		r = options_parse(argc - 1, argv + 1, &o);
		if (!r)
			serve_defaults(&o);
	} else {
		r = options_parse(argc, argv, &o);
	}
	if (r == 1)
		return EXIT_OK;
	if (r)
		return EXIT_USAGE;
	lp_verbose = o.verbose;
	debuginfo__configure(o.source_path, (int)o.debuginfod_tmo_s);
	return run(&o);
}
