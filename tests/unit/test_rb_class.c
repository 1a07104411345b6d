// SPDX-License-Identifier: GPL-2.0
/*
 * test_rb_class.c - user/profile/rb_class and the Ruby 3.1 offsets it
 * uses, against a live Debian ruby 3.1, read from outside.
 *
 * The child runs SCRIPT, whose stack when it prints READY holds a method
 * of a nested class, a module's method reached through include (an
 * iclass), a method of an anonymous class, a singleton method of a plain
 * object, a singleton method of a class, a method whose local env holds an
 * svar (it matched a regexp) with a block in it, and a method defined at
 * the top level. The test walks the main thread's control frames as the BPF walk
 * does (bpf/ruby.bpf.h: the frame's ep, up the block envs to the local
 * one, ep[-2]), names each frame with rb_iseq_resolve() and qualifies it
 * with rb_method_owner() and rb_qualify_label(): the names must be what
 * Ruby's rb_profile_frame_full_label() gives, written out below from the
 * source. Then what is not a method entry, and the label arithmetic.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "unit.h"
#include "child_report.h"
#include "ruby_child.h"
#include "dwarf/elf_symtab.h"
#include "dwarf/proc_maps.h"
#include "user/profile/rb_class.h"
#include "user/profile/rb_iseq.h"

static const char SCRIPT[] = "module Greeter\n"
			     "  def greet(h)\n"
			     "    $anon.new.hop(h)\n"
			     "  end\n"
			     "end\n"
			     "$anon = Class.new do\n"
			     "  def hop(h)\n"
			     "    o = Object.new\n"
			     "    def o.jump(h)\n"
			     "      h.call_it\n"
			     "    end\n"
			     "    o.jump(h)\n"
			     "  end\n"
			     "end\n"
			     "module Outer\n"
			     "  class Inner\n"
			     "    include Greeter\n"
			     "    def go\n"
			     "      greet(Handler)\n"
			     "    end\n"
			     "  end\n"
			     "end\n"
			     "class Handler\n"
			     "  def self.call_it\n"
			     "    new.run\n"
			     "  end\n"
			     "  def run\n"
			     "    $stdout.sync = true if 'x' =~ /x/\n"
			     "    1.times do\n"
			     "      spin\n"
			     "    end\n"
			     "  end\n"
			     "end\n"
			     "def spin\n"
			     "  $stdout.write(\"READY\\n\")\n"
			     "  i = 0\n"
			     "  i += 1 while i >= 0\n"
			     "end\n"
			     "Outer::Inner.new.go\n";

/* An anonymous class's method (hop) and a plain object's singleton
 * method (jump) keep their labels: Ruby would show "#<Class:0x...>#hop". */
static const char *const WANT[] = {
	"Object#spin", "block in Handler#run", "Handler#run",	  "Handler.call_it", "jump",
	"hop",	       "Greeter#greet",	       "Outer::Inner#go", "<main>",
};
#define NWANT (int)(sizeof(WANT) / sizeof(WANT[0]))

static pid_t start(char *dir)
{
	static char text[1 << 12];
	char path[128];
	int fds[2];
	pid_t pid;
	FILE *f;

	snprintf(dir, 64, "/tmp/lp_rbclass.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/app.rb", dir);
	f = fopen(path, "w");
	if (!f || fputs(SCRIPT, f) < 0 || fclose(f) || pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		char *const env[] = {"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8", NULL};

		dup2(fds[1], 1);
		close(fds[0]);
		execle("/usr/bin/ruby", "ruby", "--disable-gems", path, (char *)NULL, env);
		_exit(127);
	}
	close(fds[1]);
	if (pid > 0 && !read_until_ready(fds[0], text, sizeof(text))) {
		fprintf(stderr, "  ruby: no READY:\n%s\n", text);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(fds[0]);
	return pid;
}

/* What bpf/ruby.bpf.h's rb_frame_me() reads for the frame whose ep is @ep. */
static uint64_t frame_aux(pid_t pid, uint64_t ep)
{
	uint64_t flags = peek(pid, ep), v;

	for (int i = 0; i < 6 && ep; i++) {
		v = peek(pid, ep - 16);
		if (flags & 0x2) /* VM_ENV_FLAG_LOCAL */
			return v;
		if (v && !(v & 7) && (peek(pid, v) & 0xf01f) == 0x601a)
			return v;
		ep = peek(pid, ep - 8) & ~3ull;
		flags = peek(pid, ep);
	}
	return 0;
}

struct named {
	char name[RB_NAME_MAX];
	uint64_t iseq, aux;
	int err; /* of rb_method_owner() */
};

/* The main thread's frames that run an iseq, innermost first, named. */
static int walk(struct rb_iseq_cache *ic, struct rb_class_cache *cc, pid_t pid,
		const struct rb_runtime *rt, uint64_t bias, struct named *out, int max)
{
	const struct rb_offsets *o = &rt->off;
	uint64_t vm = peek(pid, rt->vm_ptr_addr + bias);
	uint64_t th = peek(pid, vm + o->vm_main_thread), ec = peek(pid, th + o->thread_ec);
	uint64_t cfp = peek(pid, ec + o->ec_cfp);
	uint64_t end = peek(pid, ec + o->ec_vm_stack) + 8 * peek(pid, ec + o->ec_vm_stack_size);
	int n = 0;

	for (; cfp && cfp + 2 * o->cfp_size <= end && n < max; cfp += o->cfp_size) {
		uint64_t iseq = peek(pid, cfp + o->cfp_iseq), pc = peek(pid, cfp + o->cfp_pc);
		struct rb_frame_name nm;
		char owner[RB_CLASS_MAX];
		bool single = false;

		if (!iseq || !pc || rb_iseq_resolve(ic, pid, rt, iseq, 0, 0, &nm))
			continue;
		out[n].iseq = iseq;
		out[n].aux = frame_aux(pid, peek(pid, cfp + o->cfp_ep));
		out[n].err = rb_method_owner(cc, pid, rt, rt->cobject_addr + bias, out[n].aux,
					     owner, sizeof(owner), &single);
		if (out[n].err || !rb_qualify_label(&nm, owner, single, out[n].name, RB_NAME_MAX))
			snprintf(out[n].name, RB_NAME_MAX, "%s", nm.label);
		n++;
	}
	return n;
}

static bool names_are(const struct named *f, int n, bool report)
{
	bool ok = n == NWANT;

	for (int i = 0; i < n; i++) {
		ok &= i < NWANT && !strcmp(f[i].name, WANT[i]);
		if (report)
			fprintf(stderr, "  frame %d: %s (owner: %d)\n", i, f[i].name, f[i].err);
	}
	return ok;
}

/* What is not a method entry: nothing to qualify, or refused. */
static void check_not_methods(struct rb_class_cache *cc, pid_t pid, const struct rb_runtime *rt,
			      uint64_t bias, const struct named *f, int n)
{
	uint64_t cobject = rt->cobject_addr + bias;
	char owner[RB_CLASS_MAX];
	bool single;

	/* <main>'s local env holds a cref (or an svar holding one) */
	CHECK_EQ_INT(f[n - 1].err, -ENOENT);
	CHECK(f[n - 1].aux != 0);
	/* an iseq is an imemo, but not a method entry; a String is no imemo */
	CHECK_EQ_INT(
		rb_method_owner(cc, pid, rt, cobject, f[0].iseq, owner, sizeof(owner), &single),
		-EINVAL);
	CHECK_EQ_INT(rb_method_owner(cc, pid, rt, cobject, peek(pid, cobject), owner, sizeof(owner),
				     &single),
		     -EINVAL);
	CHECK_EQ_INT(rb_method_owner(cc, pid, rt, cobject, 0, owner, sizeof(owner), &single),
		     -ENOENT);
	CHECK(rb_method_owner(cc, pid, rt, cobject, 8, owner, sizeof(owner), &single) < 0);
	/* the singleton's and the svar'd method's entries, read again from
	 * the cache once the process is gone */
	CHECK_EQ_INT(rb_method_owner(cc, pid, rt, cobject, f[3].aux, owner, sizeof(owner), &single),
		     0);
	CHECK_STR(owner, "Handler");
	CHECK(single);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * For the record, not a check: rb_method_owner() over the frames' method
 * entries with nothing cached (the IDs learned from Object, then each
 * entry, class and path read), then again (an svar is read every time).
 */
static void time_owners(struct rb_class_cache *cc, pid_t pid, const struct rb_runtime *rt,
			uint64_t bias, const struct named *f)
{
	char owner[RB_CLASS_MAX];
	uint64_t t[3];
	bool single;

	rb_class_cache__forget_pid(cc, pid);
	for (int k = 0; k < 3; k++) {
		t[k] = now_ns();
		for (int i = 0; k < 2 && i < NWANT; i++)
			rb_method_owner(cc, pid, rt, rt->cobject_addr + bias, f[i].aux, owner,
					sizeof(owner), &single);
	}
	fprintf(stderr, "  owners of %d frames: %.1f us cold, %.1f us cached\n", NWANT,
		(t[1] - t[0]) / 1e3, (t[2] - t[1]) / 1e3);
}

UNIT_TEST(qualify_live_frames)
{
	struct rb_iseq_cache *ic = rb_iseq_cache__new();
	struct rb_class_cache *cc = rb_class_cache__new();
	struct rb_runtime rt = {0};
	struct named f[32];
	char dir[64] = "", cmd[128];
	uint64_t bias = 0;
	pid_t pid;
	int n = 0;

	CHECK(ic && cc);
	pid = ic && cc && !access("/usr/bin/ruby", X_OK) ? start(dir) : -1;
	CHECK(pid > 0);
	if (pid > 0) {
		CHECK_EQ_INT(find_libruby(pid, &rt, &bias), 0);
		CHECK(rt.cobject_addr != 0);
		/* READY comes just before the loop: wait until spin runs it */
		for (int tries = 0; tries < 50; tries++) {
			struct timespec ts = {0, 100 * 1000 * 1000};

			n = walk(ic, cc, pid, &rt, bias, f, 32);
			if (names_are(f, n, false))
				break;
			rb_iseq_cache__forget_pid(ic, pid);
			rb_class_cache__forget_pid(cc, pid);
			nanosleep(&ts, NULL);
		}
		CHECK(names_are(f, n, true));
		if (n == NWANT)
			time_owners(cc, pid, &rt, bias, f);
		if (n == NWANT) {
			check_not_methods(cc, pid, &rt, bias, f, n);
			/* the svar: run's local env matched a regexp */
			CHECK_EQ_INT(peek(pid, f[2].aux) >> 12 & 0xf, RB_IMEMO_SVAR);
			/* nothing to qualify by: not a failed read */
			CHECK_EQ_INT(f[4].err, -ENOENT);
			CHECK_EQ_INT(f[5].err, -ENOENT);
		}
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		CHECK(system(cmd) == 0);
	}
	rb_iseq_cache__free(ic);
	rb_class_cache__free(cc);
}

UNIT_TEST(qualify_labels)
{
	struct rb_frame_name nm = {0};
	char out[RB_NAME_MAX] = "untouched";

	snprintf(nm.label, sizeof(nm.label), "block (2 levels) in call");
	snprintf(nm.base_label, sizeof(nm.base_label), "call");
	CHECK(rb_qualify_label(&nm, "A::B", false, out, sizeof(out)));
	CHECK_STR(out, "block (2 levels) in A::B#call");
	CHECK(rb_qualify_label(&nm, "A", true, out, sizeof(out)));
	CHECK_STR(out, "block (2 levels) in A.call");
	snprintf(nm.label, sizeof(nm.label), "rescue in run");
	snprintf(nm.base_label, sizeof(nm.base_label), "call");
	snprintf(out, sizeof(out), "untouched");
	CHECK(!rb_qualify_label(&nm, "A", false, out, sizeof(out)));
	CHECK_STR(out, "untouched");
	nm.base_label[0] = '\0';
	CHECK(!rb_qualify_label(&nm, "A", false, out, sizeof(out)));
	/* cut to the room there is */
	snprintf(nm.label, sizeof(nm.label), "call");
	snprintf(nm.base_label, sizeof(nm.base_label), "call");
	CHECK(rb_qualify_label(&nm, "Handler", false, out, 8));
	CHECK_STR(out, "Handler");
}

UNIT_MAIN()
