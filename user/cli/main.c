// SPDX-License-Identifier: GPL-2.0
/*
 * main.c - liveprof's entry point: subcommands, checks before anything is
 * attached, the batch loop, and the one exit path.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>

#include "user/session/bpf_session.h"
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
#include "user/util/util.h"

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
			lp_err("unknown output format '%s' (use .folded, .txt, .svg or .pb.gz)", p);
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
	int gate[2], status[2];
	pid_t pid;

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

static int bpf_open_error(int err, bool verbose)
{
	if (err == -ENOENT) {
		lp_err("this kernel has no BTF ('/sys/kernel/btf/vmlinux'); liveprof needs "
		       "CONFIG_DEBUG_INFO_BTF=y");
		return EXIT_UNSUPPORTED;
	}
	if (err == -EPERM) {
		lp_err("loading BPF programs was refused: %s (root or CAP_BPF+CAP_PERFMON)",
		       strerror(-err));
		return EXIT_PERMISSION;
	}
	lp_err("cannot load the BPF programs: %s%s", strerror(-err),
	       verbose ? "" : " (run with -v for the verifier log)");
	return EXIT_BPF;
}

static int setup_traces(struct daemon *d, struct options *o)
{
	char err[512];
	int split_id = -1, when_id = -1;
	double pct = 95;

	if (!o->n_traces && !o->split_spec)
		return 0;
	d->traces = traces__new(d);
	if (!d->traces)
		return EXIT_RUNTIME;
	for (int i = 0; i < o->n_traces; i++) {
		int id = traces__add_by(d->traces, o->traces[i], i == 0 ? o->by_expr : NULL, err,
					sizeof(err));

		if (id < 0) {
			lp_err("%s", err);
			return EXIT_PROBE;
		}
	}
	if (o->split_spec) {
		char func[256];
		const char *at = strrchr(o->split_spec, '@');
		size_t n = at ? (size_t)(at - o->split_spec) : strlen(o->split_spec);

		if (at) {
			char *end;

			pct = strtod(at + 1 + (at[1] == 'p'), &end);
			if (*end || pct <= 0 || pct >= 100) {
				lp_err("invalid split percentile '%s' (e.g. FUNC@p95)", at + 1);
				return EXIT_USAGE;
			}
		}
		if (n >= sizeof(func)) {
			lp_err("split spec too long");
			return EXIT_USAGE;
		}
		memcpy(func, o->split_spec, n);
		func[n] = 0;
		/* Reuse an identical --trace rather than probing twice. */
		for (int i = 0; i < traces__count(d->traces); i++)
			if (!strcmp(traces__info(d->traces, i)->spec, func))
				split_id = traces__info(d->traces, i)->id;
		if (split_id < 0)
			split_id = traces__add_by(d->traces, func, o->n_traces ? NULL : o->by_expr,
						  err, sizeof(err));
		if (split_id < 0) {
			lp_err("%s", err);
			return EXIT_PROBE;
		}
		if (o->when_spec) {
			when_id = traces__add(d->traces, o->when_spec, err, sizeof(err));
			if (when_id < 0) {
				lp_err("%s", err);
				return EXIT_PROBE;
			}
			traces__set_when(d->traces, split_id, when_id);
		}
		d->split = split__new(d, split_id, pct, when_id);
		if (!d->split)
			return EXIT_RUNTIME;
	}
	return 0;
}

static void batch_loop(struct daemon *d, const struct options *o)
{
	uint64_t deadline = o->duration_s ? d->start_ns + (uint64_t)(o->duration_s * 1e9) : 0;
	uint64_t next_print = o->interval_s ? d->start_ns + (uint64_t)(o->interval_s * 1e9) : 0;

	while (!g_stop) {
		uint64_t now;
		int err = daemon__poll(d, 100);

		if (err && err != -EINTR) {
			lp_err("reading events: %s", strerror(-err));
			break;
		}
		now = lp_now_ns();
		if (deadline && now >= deadline)
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

static int run(struct options *o)
{
	struct bpf_session_opts bo = {
		.all_processes = o->all,
		.kernel_stacks = o->kernel,
		.offcpu = o->offcpu,
		/* the TUI may add traces at any time */
		.tracing = o->n_traces || o->split_spec || will_tui(o) || o->http_addr,
		.ringbuf_mb = o->ringbuf_mb,
		.verbose = o->verbose,
		/* fp still copies a little: enough for CFI to find a frameless
		 * leaf's return address (daemon.c, unwind_user) */
		.stack_copy_bytes =
			o->call_graph == CALL_GRAPH_FP ? FP_LEAF_COPY_BYTES : o->stack_kib << 10,
	};
	struct bpf_session *bpf = NULL;
	struct serve *http = NULL;
	struct daemon d;
	int go_fd = -1, status_fd = -1, rc, err;
	pid_t child = 0;
	char child_exe[4096];
	bool tui;

	memset(&d, 0, sizeof(d));
	/* First: a Ctrl-C while BPF loads must end the run cleanly, with the
	 * profile written, and an inherited SIG_IGN must not stop it. */
	install_signals();
	rc = check_outputs(o);
	if (rc)
		return rc;
	if (check_privileges())
		return EXIT_PERMISSION;
	for (int i = 0; i < o->n_pids; i++) {
		if (kill(o->pids[i], 0) && errno == ESRCH) {
			lp_err("no such process '%d'", o->pids[i]);
			return EXIT_NO_TARGET;
		}
	}
	if (o->command) {
		status_fd = launch(o->command, &go_fd, &child);
		if (status_fd < 0) {
			lp_err("cannot start '%s': %s", o->command[0], strerror(-status_fd));
			return EXIT_NO_TARGET;
		}
	}

	err = bpf_session__open(&bpf, &bo);
	if (err) {
		rc = bpf_open_error(err, o->verbose);
		goto out;
	}
	err = daemon__init(&d, o, bpf);
	if (err) {
		lp_err("cannot set up: %s", strerror(-err));
		rc = EXIT_RUNTIME;
		goto out;
	}
	d.child = child;
	if (child)
		d.child_exe = resolve_command(o->command[0], child_exe, sizeof(child_exe));
	if (child)
		o->pids[o->n_pids++] = child;
	for (int i = 0; i < o->n_pids; i++) {
		err = daemon__add_target(&d, o->pids[i]);
		if (err) {
			lp_err("cannot follow process '%d': %s", o->pids[i], strerror(-err));
			rc = EXIT_RUNTIME;
			goto out;
		}
	}
	err = bpf_session__start_sampling(bpf, o->freq);
	if (err) {
		lp_err("cannot open the cpu-clock perf event: %s", strerror(-err));
		rc = err == -EACCES || err == -EPERM ? EXIT_PERMISSION : EXIT_UNSUPPORTED;
		goto out;
	}
	rc = setup_traces(&d, o);
	if (rc)
		goto out;
	if (child) {
		if (release(go_fd, status_fd, child, o->command[0])) {
			go_fd = status_fd = -1;
			child = 0;
			d.child = 0;
			rc = EXIT_NO_TARGET;
			goto out;
		}
		go_fd = status_fd = -1;
	}
	if (o->http_addr) {
		struct serve_opts so = {.addr = o->http_addr, .token_file = o->http_token};

		err = serve__start(&http, &d, &so);
		if (err) {
			rc = err == -EINVAL || err == -EACCES ? EXIT_USAGE : EXIT_RUNTIME;
			goto out;
		}
	}
	tui = will_tui(o);
	if (!tui || tui_run(&d, &g_stop) == -ENOTTY)
		batch_loop(&d, o);

	/* Stop producing, then take everything already in the ring buffer. */
	serve__stop(http);
	http = NULL;
	bpf_session__stop_sampling(bpf);
	ring_buffer__consume(bpf_session__ringbuf(bpf));
	d.end_ns = lp_now_ns();
	daemon__targets_alive(&d);
	daemon__symbolize_new(&d);
	if (d.traces)
		traces__tick(d.traces, d.end_ns);
	rc = report__finish(&d, stdout);
out:
	if (go_fd >= 0)
		close(go_fd); /* the gated child reads EOF and exits */
	if (status_fd >= 0)
		close(status_fd);
	/* A launched command outlives neither a failure nor the end of the
	 * run (-d, Ctrl-C): stop it like timeout(1) would. */
	if (child && !d.child_exited) {
		kill(child, SIGTERM);
		waitpid(child, NULL, 0);
	}
	serve__stop(http);
	daemon__fini(&d);
	bpf_session__close(bpf);
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

int main(int argc, char **argv)
{
	struct options o;
	int r;

	if (argc > 1 && !strcmp(argv[1], "emit"))
		return cmd_emit(argc - 1, argv + 1);
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
	return run(&o);
}
