// SPDX-License-Identifier: GPL-2.0
/*
 * test_rb_iseq.c - user/profile/rb_iseq and the Ruby 3.1 offsets table
 * against a live Debian ruby 3.1, walked from outside.
 *
 * The child runs SCRIPT (which requires LIB) from a temporary folder and
 * ends in a busy loop in work_a. Before that it prints, for work_a, parse
 * and outer, the width and line of every instruction as Ruby itself
 * decodes them (RubyVM::InstructionSequence#to_a), and the native thread
 * id of a second, sleeping thread. The test then reads, only with
 * process_vm_readv: ruby_current_vm_ptr (libruby's ELF address plus its
 * load bias from /proc/PID/maps) -> the main thread -> its EC -> the
 * control frames from ec->cfp up to the end of the VM stack, and names
 * every frame with rb_iseq_resolve(). Names, paths and the lines of the
 * suspended callers are known from the sources below (their markers); the
 * running frame's line is one of its loop's two lines; every instruction
 * of the three methods must get Ruby's own line. The thread list, the
 * threads' ids, the frames' self and ep are checked against what they
 * must hold. Then garbage: objects that are not iseqs in the child, and
 * iseqs made up in this process.
 */
#include <errno.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "unit.h"
#include "child_report.h"
#include "ruby_child.h"
#include "dwarf/elf_symtab.h"
#include "dwarf/proc_maps.h"
#include "user/profile/rb_iseq.h"

/* 22 bytes: as a path, the longest kind of String 3.1 embeds (23 at most) */
#define SCRIPT_NAME "liveprof_script_22b.rb"

static const char LIB[] = "class Handler\n"
			  "  def parse(n)\n"
			  "    1.times do # CALL_TIMES\n"
			  "      work_a(n) # CALL_BLOCK\n"
			  "    end\n"
			  "  end\n"
			  "end\n"
			  "def work_a(n)\n"
			  "  $stdout.write(\"READY\\n\")\n"
			  "  $stdout.flush\n"
			  "  i = 0\n"
			  "  while i >= 0 # LOOP_TEST\n"
			  "    i += n # LOOP_BODY\n"
			  "  end\n"
			  "  i\n"
			  "end\n";

static const char SCRIPT_TEMPLATE[] = "require_relative 'lib'\n"
				      "def table(key, m)\n"
				      "  line = 0\n"
				      "  out = []\n"
				      "  RubyVM::InstructionSequence.of(m).to_a.last.each do |x|\n"
				      "    line = x if x.is_a?(Integer)\n"
				      "    out << \"#{x.size}:#{line}\" if x.is_a?(Array)\n"
				      "  end\n"
				      "  puts \"TABLE #{key} #{out.join(' ')}\"\n"
				      "end\n"
				      "def outer\n"
				      "  v = 0\n"
				      "FILLER"
				      "  Handler.new.parse(v) # CALL_OUTER\n"
				      "end\n"
				      "table('work_a', method(:work_a))\n"
				      "table('parse', Handler.instance_method(:parse))\n"
				      "table('outer', method(:outer))\n"
				      "t = Thread.new { sleep }\n"
				      "Thread.pass until t.status == 'sleep'\n"
				      "puts \"THREAD #{t.native_thread_id}\"\n"
				      "[1].each do\n"
				      "  outer # CALL_MAIN\n"
				      "end\n";

/*
 * outer's body gets FILLER_LINES distinct lines of seven instructions
 * each: an iseq of over a thousand, whose line index has blocks past the
 * immediate part (54 positions) and words past a block's first.
 */
#define FILLER_LINES 150
static char SCRIPT[sizeof(SCRIPT_TEMPLATE) + FILLER_LINES * 16];

static void build_script(void)
{
	const char *at = strstr(SCRIPT_TEMPLATE, "FILLER");
	size_t len = at - SCRIPT_TEMPLATE;

	memcpy(SCRIPT, SCRIPT_TEMPLATE, len);
	for (int i = 0; i < FILLER_LINES; i++)
		len += snprintf(SCRIPT + len, sizeof(SCRIPT) - len, "  v = v + 1\n");
	snprintf(SCRIPT + len, sizeof(SCRIPT) - len, "%s", at + 6);
}

/* The 1-based line of @src holding @marker. */
static int marker_line(const char *src, const char *marker)
{
	const char *at = strstr(src, marker);
	int line = 1;

	for (const char *s = src; at && s < at; s++)
		line += *s == '\n';
	return at ? line : -1;
}

#define NTABLES	  3
#define MAX_INSNS 1024

static const char *const table_keys[NTABLES] = {"work_a", "parse", "outer"};

struct child {
	pid_t pid;
	char dir[64];
	int other_tid; /* the sleeping thread's native id */
	int ninsn[NTABLES];
	int width[NTABLES][MAX_INSNS], line[NTABLES][MAX_INSNS];
};

static int parse_table(struct child *ch, char *rest)
{
	char *save = NULL, *key = strtok_r(rest, " ", &save), *tok;

	for (int k = 0; key && k < NTABLES; k++) {
		if (strcmp(key, table_keys[k]))
			continue;
		while ((tok = strtok_r(NULL, " ", &save)) && ch->ninsn[k] < MAX_INSNS) {
			int i = ch->ninsn[k]++;

			if (sscanf(tok, "%d:%d", &ch->width[k][i], &ch->line[k][i]) != 2)
				return -1;
		}
		return ch->ninsn[k] > 0 ? 0 : -1;
	}
	return -1;
}

static int parse_report(struct child *ch, char *text)
{
	char *save = NULL;

	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(l, "TABLE ", 6) && parse_table(ch, l + 6))
			return -1;
		if (!strncmp(l, "THREAD ", 7))
			ch->other_tid = atoi(l + 7);
	}
	for (int k = 0; k < NTABLES; k++)
		if (!ch->ninsn[k])
			return -1;
	return ch->other_tid > 0 ? 0 : -1;
}

static bool write_file(const char *dir, const char *name, const char *text)
{
	char path[128];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return false;
	ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok;
}

static void stop(struct child *ch)
{
	char cmd[128];

	if (ch->pid > 0) {
		kill(ch->pid, SIGKILL);
		waitpid(ch->pid, NULL, 0);
		ch->pid = 0;
	}
	if (ch->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", ch->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "  could not remove %s\n", ch->dir);
		ch->dir[0] = '\0';
	}
}

/* Run `ruby SCRIPT_NAME` in a new folder; read its report up to READY. */
static int start(struct child *ch)
{
	static char text[1 << 16];
	bool ready;
	int fds[2];

	memset(ch, 0, sizeof(*ch));
	build_script();
	snprintf(ch->dir, sizeof(ch->dir), "/tmp/lp_rbiseq.XXXXXX");
	if (!mkdtemp(ch->dir) || !write_file(ch->dir, "lib.rb", LIB) ||
	    !write_file(ch->dir, SCRIPT_NAME, SCRIPT) || pipe(fds))
		return -1;
	text[0] = '\0';
	ch->pid = fork();
	if (ch->pid == 0) {
		char *const env[] = {"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8", NULL};

		dup2(fds[1], 1);
		close(fds[0]);
		/* relative: the main script's pathobj is then [path, realpath] */
		if (chdir(ch->dir) == 0)
			execle("/usr/bin/ruby", "ruby", "--disable-gems", SCRIPT_NAME, (char *)NULL,
			       env);
		_exit(127);
	}
	close(fds[1]);
	ready = ch->pid > 0 && read_until_ready(fds[0], text, sizeof(text));
	close(fds[0]);
	if (!ready || parse_report(ch, text)) {
		fprintf(stderr, "  ruby: no usable report:\n%s\n", text);
		return -1;
	}
	return 0;
}

#define MAX_FRAMES 64

struct frame {
	uint64_t cfp, iseq, pc;
	int err;
	struct rb_frame_name name;
};

/*
 * The main thread's control frames, innermost first, each resolved, but
 * the dummy frame at the end of the stack (whose address goes to @dummy):
 * Ruby's backtraces leave it out too.
 */
static int walk(struct rb_iseq_cache *c, pid_t pid, const struct rb_runtime *rt, uint64_t bias,
		struct frame *f, uint64_t *dummy)
{
	const struct rb_offsets *o = &rt->off;
	uint64_t vm = peek(pid, rt->vm_ptr_addr + bias);
	uint64_t th = peek(pid, vm + o->vm_main_thread);
	uint64_t ec = peek(pid, th + o->thread_ec);
	uint64_t cfp = peek(pid, ec + o->ec_cfp);
	uint64_t end = peek(pid, ec + o->ec_vm_stack) + 8 * peek(pid, ec + o->ec_vm_stack_size);
	int n = 0;

	if (!vm || !th || !ec || !cfp || cfp >= end)
		return -1;
	*dummy = end - o->cfp_size;
	for (; cfp + 2 * o->cfp_size <= end && n < MAX_FRAMES; cfp += o->cfp_size, n++) {
		f[n].cfp = cfp;
		f[n].iseq = peek(pid, cfp + o->cfp_iseq);
		f[n].pc = peek(pid, cfp + o->cfp_pc);
		f[n].err = rb_iseq_resolve(c, pid, rt, f[n].iseq, f[n].pc, 0, &f[n].name);
	}
	return n;
}

struct expect {
	const char *label, *file;
	int line, line2; /* line2: another line that is right, or 0 */
};

/* The frames Ruby names, innermost first, must be exactly @want. */
static bool check_names(const struct frame *f, int n, const struct expect *want, int nwant,
			bool report)
{
	int k = 0;
	bool ok = true;

	for (int i = 0; i < n; i++) {
		const struct rb_frame_name *nm = &f[i].name;

		/* pc 0: a C frame, or the dummy TOP frame under <main> */
		if (!f[i].iseq || !f[i].pc)
			continue;
		ok &= !f[i].err && k < nwant && !strcmp(nm->label, want[k].label) &&
		      !strcmp(nm->path, want[k].file) &&
		      (nm->line == want[k].line || nm->line == want[k].line2);
		if (report)
			fprintf(stderr, "  frame %d: %s %s:%d\n", i, nm->label, nm->path, nm->line);
		k++;
	}
	return ok && k == nwant;
}

/* The iseq's instructions, as its body says (the test reads it itself). */
static uint64_t iseq_encoded(pid_t pid, const struct rb_offsets *o, uint64_t iseq)
{
	return peek(pid, peek(pid, iseq + o->iseq_body) + o->body_iseq_encoded);
}

/* Every instruction of table @k: a pc just past its opcode and one at its
 * end give Ruby's own line for it. */
static void check_table(struct rb_iseq_cache *c, const struct child *ch,
			const struct rb_runtime *rt, int k, uint64_t iseq, int first_line)
{
	uint64_t body = peek(ch->pid, iseq + rt->off.iseq_body), pflags;
	uint64_t enc = iseq_encoded(ch->pid, &rt->off, iseq);
	struct rb_frame_name nm;
	int pos = 0, bad = 0;

	CHECK(enc != 0);
	for (int i = 0; i < ch->ninsn[k] && bad < 3; i++) {
		uint64_t pcs[2] = {enc + 8 * (pos + 1), enc + 8 * (pos + ch->width[k][i])};

		for (int j = 0; j < 2; j++) {
			nm.line = -1;
			CHECK_EQ_INT(rb_iseq_resolve(c, ch->pid, rt, iseq, pcs[j], 0, &nm), 0);
			if (nm.line != ch->line[k][i]) {
				fprintf(stderr, "  %s insn %d at %d:\n", table_keys[k], i, pos);
				CHECK_EQ_INT(nm.line, ch->line[k][i]);
				bad++;
			}
		}
		pos += ch->width[k][i];
	}
	/* every instruction counted; outer's index has a second 512-bit block */
	CHECK_EQ_INT(pos, peek(ch->pid, body + rt->off.body_iseq_size) & 0xffffffff);
	if (k == 2)
		CHECK(pos > 54 + 512);
	/* the table is the succinct index: 3.1 freed the positions */
	CHECK_EQ_INT(peek(ch->pid, body + rt->off.body_insns_pos), 0);
	/* no pc: the first line, the line of the def */
	CHECK_EQ_INT(rb_iseq_resolve(c, ch->pid, rt, iseq, 0, 0, &nm), 0);
	CHECK_EQ_INT(nm.line, first_line);
	/* the type: ISEQ_TYPE_METHOD */
	CHECK_EQ_INT(peek(ch->pid, body + rt->off.body_type) & 0xffffffff, 1);
	/* both kinds of pathobj were read: the script's is [path, realpath]
	 * (run by a relative name), lib.rb's a String too long to embed */
	pflags = peek(ch->pid, peek(ch->pid, body + rt->off.body_pathobj));
	if (k == 2) {
		CHECK_EQ_INT(pflags & RB_T_MASK, RB_T_ARRAY);
		CHECK(pflags & rt->off.rarray_embed_flag);
	} else {
		CHECK_EQ_INT(pflags & RB_T_MASK, RB_T_STRING);
		CHECK(pflags & rt->off.rstring_noembed);
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/*
 * The thread's native id is pthread_self(): on x86-64 glibc the TCB, whose
 * first word (tcbhead_t.tcb) and third (.self) point to itself and whose
 * word at 0x28 (%fs:0x28, the stack guard) is AT_RANDOM's first eight
 * bytes with the low byte cleared.
 */
static void check_tcb(pid_t pid, uint64_t id)
{
	char path[64];
	uint64_t aux[2], rnd = 0;
	int fd;

	CHECK(id != 0);
	CHECK_EQ_INT(peek(pid, id), id);
	CHECK_EQ_INT(peek(pid, id + 16), id);
	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	while (fd >= 0 && read(fd, aux, sizeof(aux)) == sizeof(aux) && aux[0] != AT_NULL)
		if (aux[0] == AT_RANDOM)
			rnd = peek(pid, aux[1]);
	if (fd >= 0)
		close(fd);
	CHECK(rnd != 0);
	CHECK_EQ_INT(peek(pid, id + 0x28), rnd & ~0xffull);
}

/* The main ractor's thread list: main and the sleeping thread, ids right. */
static void check_threads(const struct child *ch, const struct rb_runtime *rt, uint64_t bias)
{
	const struct rb_offsets *o = &rt->off;
	pid_t pid = ch->pid;
	uint64_t vm = peek(pid, rt->vm_ptr_addr + bias);
	uint64_t main_th = peek(pid, vm + o->vm_main_thread);
	uint64_t r = peek(pid, vm + o->vm_main_ractor);
	uint64_t head = r + o->ractor_threads_set, node;
	bool seen_main = false, seen_other = false;
	int n = 0;

	CHECK(r != 0 && main_th != 0);
	CHECK_EQ_INT(peek(pid, r + o->ractor_threads_main), main_th);
	CHECK_EQ_INT(peek(pid, r + o->ractor_threads_cnt) & 0xffffffff, 2);
	for (node = peek(pid, head); node && node != head && n < 8; node = peek(pid, node), n++) {
		uint64_t th = node - o->thread_lt_node;
		int tid = (int)peek(pid, th + o->thread_tid);

		check_tcb(pid, peek(pid, th + o->thread_native_id));
		if (th == main_th) {
			seen_main = true;
			CHECK_EQ_INT(tid, pid);
		} else {
			seen_other = tid == ch->other_tid;
			CHECK_EQ_INT(tid, ch->other_tid);
		}
	}
	CHECK_EQ_INT(node, head);
	CHECK_EQ_INT(n, 2);
	CHECK(seen_main && seen_other);
}

/* Method frames: ep[0] holds VM_FRAME_MAGIC_METHOD, self is a T_OBJECT. */
static void check_method_frame(pid_t pid, const struct rb_offsets *o, const struct frame *f)
{
	uint64_t ep = peek(pid, f->cfp + o->cfp_ep), self = peek(pid, f->cfp + o->cfp_self);

	CHECK_EQ_INT(peek(pid, ep) & 0x7fff0001, 0x11110001);
	CHECK_EQ_INT(peek(pid, self) & RB_T_MASK, 0x01);
}

/*
 * What the walk leaves to the walker: the end frame is the dummy, and a
 * block's parent_iseq is the iseq of the method it is in (the frame two
 * further out, past Integer#times).
 */
static void check_frames(pid_t pid, const struct rb_offsets *o, const struct frame *f, int n,
			 uint64_t dummy)
{
	uint64_t ep = peek(pid, dummy + o->cfp_ep);
	int blocks = 0;

	CHECK_EQ_INT(peek(pid, ep) & 0x7fff0001, 0x79990001);
	for (int i = 0; i + 2 < n; i++) {
		uint64_t body = peek(pid, f[i].iseq + o->iseq_body);

		if (f[i].err || strcmp(f[i].name.label, "block in parse"))
			continue;
		blocks++;
		CHECK_EQ_INT(peek(pid, body + o->body_type) & 0xffffffff, 2); /* ISEQ_TYPE_BLOCK */
		CHECK(f[i + 1].iseq == 0); /* Integer#times, a C function */
		CHECK_EQ_INT(peek(pid, body + o->body_parent_iseq), f[i + 2].iseq);
		CHECK_STR(f[i + 2].name.label, "parse");
		/* base_label (body_base_label): the method's name, in both */
		CHECK_STR(f[i].name.base_label, "parse");
		CHECK_STR(f[i + 2].name.base_label, "parse");
	}
	CHECK_EQ_INT(blocks, 1);
}

/* Not iseqs: refused, never named. */
static void check_hostile(struct rb_iseq_cache *c, pid_t pid, const struct rb_runtime *rt,
			  const struct frame *f, int n)
{
	uint64_t body = peek(pid, f[0].iseq + rt->off.iseq_body);
	struct rb_frame_name nm;
	int cfuncs = 0;

	/* a String (work_a's label), a body, unmapped and NULL addresses */
	CHECK_EQ_INT(rb_iseq_resolve(c, pid, rt, peek(pid, body + rt->off.body_label), 0, 0, &nm),
		     -EINVAL);
	CHECK(rb_iseq_resolve(c, pid, rt, body, 0, 0, &nm) < 0);
	CHECK_EQ_INT(rb_iseq_resolve(c, pid, rt, 8, 0, 0, &nm), -EFAULT);
	CHECK_EQ_INT(rb_iseq_resolve(c, pid, rt, 0, 0, 0, &nm), -EFAULT);
	/* a C function's frame has its method entry (T_IMEMO, but not an
	 * iseq) at ep[-2]: what a walker that misreads a frame would pass */
	for (int i = 0; i < n; i++) {
		uint64_t ep = peek(pid, f[i].cfp + rt->off.cfp_ep), me;

		if ((peek(pid, ep) & 0x7fff0001) != 0x55550001)
			continue;
		cfuncs++;
		me = peek(pid, ep - 16);
		CHECK_EQ_INT(peek(pid, me) & RB_T_MASK, RB_T_IMEMO);
		CHECK_EQ_INT(rb_iseq_resolve(c, pid, rt, me, 0, 0, &nm), -EINVAL);
	}
	CHECK(cfuncs >= 2); /* Integer#times and Array#each */
}

UNIT_TEST(walk_a_live_ruby)
{
	struct rb_iseq_cache *c = rb_iseq_cache__new();
	struct rb_runtime rt = {0};
	struct frame f[MAX_FRAMES];
	struct child ch = {0};
	uint64_t bias = 0, dummy = 0;
	char lib[PATH_MAX + 16], rl[PATH_MAX];
	int n = 0, tries;

	CHECK(c != NULL);
	if (!c || access("/usr/bin/ruby", X_OK) || start(&ch)) {
		CHECK(!"ruby ran the script");
		stop(&ch);
		rb_iseq_cache__free(c);
		return;
	}
	CHECK_EQ_INT(find_libruby(ch.pid, &rt, &bias), 0);
	snprintf(lib, sizeof(lib), "%s/lib.rb", realpath(ch.dir, rl) ? rl : ch.dir);
	const struct expect want[] = {
		{"work_a", lib, marker_line(LIB, "LOOP_TEST"), marker_line(LIB, "LOOP_BODY")},
		{"block in parse", lib, marker_line(LIB, "CALL_BLOCK"), 0},
		{"parse", lib, marker_line(LIB, "CALL_TIMES"), 0},
		{"outer", SCRIPT_NAME, marker_line(SCRIPT, "CALL_OUTER"), 0},
		{"block in <main>", SCRIPT_NAME, marker_line(SCRIPT, "CALL_MAIN"), 0},
		{"<main>", SCRIPT_NAME, marker_line(SCRIPT, "[1].each"), 0},
	};
	const int nwant = sizeof(want) / sizeof(want[0]);
	const int def_line[NTABLES] = {marker_line(LIB, "def work_a"),
				       marker_line(LIB, "def parse"),
				       marker_line(SCRIPT, "def outer")};

	/* READY is written just before the loop: wait until work_a runs it */
	for (tries = 0; tries < 50 && rt.vm_ptr_addr; tries++) {
		n = walk(c, ch.pid, &rt, bias, f, &dummy);
		if (n > 0 && check_names(f, n, want, nwant, false))
			break;
		sleep_ms(100);
	}
	CHECK(check_names(f, n > 0 ? n : 0, want, nwant, true));
	CHECK(n > 3);
	if (n > 3) {
		for (int i = 0; i < n; i++)
			for (int k = 0; k < NTABLES; k++)
				if (!f[i].err && !strcmp(f[i].name.label, table_keys[k]))
					check_table(c, &ch, &rt, k, f[i].iseq, def_line[k]);
		check_method_frame(ch.pid, &rt.off, &f[0]);
		check_frames(ch.pid, &rt.off, f, n, dummy);
		check_hostile(c, ch.pid, &rt, f, n);
		check_threads(&ch, &rt, bias);

		/* cached: answered with the process gone; forgotten: -ESRCH */
		kill(ch.pid, SIGKILL);
		waitpid(ch.pid, NULL, 0);
		struct rb_frame_name nm;

		CHECK_EQ_INT(rb_iseq_resolve(c, ch.pid, &rt, f[0].iseq, f[0].pc, 0, &nm), 0);
		CHECK_STR(nm.label, "work_a");
		rb_iseq_cache__forget_pid(c, ch.pid);
		CHECK_EQ_INT(rb_iseq_resolve(c, ch.pid, &rt, f[0].iseq, f[0].pc, 0, &nm), -ESRCH);
		ch.pid = 0;
	}
	stop(&ch);
	rb_iseq_cache__free(c);
}

static void put32(uint64_t *pool, uint32_t off, uint32_t v)
{
	memcpy((char *)pool + off, &v, sizeof(v));
}

/* A String in this process, as 3.1 lays it out: embedded if it fits. */
static void fake_str(uint64_t *obj, const struct rb_offsets *o, const char *text)
{
	size_t len = strlen(text);

	memset(obj, 0, o->rstring_size);
	obj[0] = RB_T_STRING;
	if (len < o->rstring_size - o->rstring_embed) {
		obj[0] |= (uint64_t)len << o->rstring_elen_shift;
		memcpy((char *)obj + o->rstring_embed, text, len);
	} else {
		obj[0] |= o->rstring_noembed;
		obj[o->rstring_len / 8] = len;
		obj[o->rstring_ptr / 8] = (uint64_t)(uintptr_t)text;
	}
}

/* Names cut on a character boundary, bytes that are not UTF-8 replaced;
 * an iseq built in this process. */
UNIT_TEST(names_are_cut_on_characters)
{
	const struct rb_offsets *o = ruby_offsets_builtin(3, 1);
	struct rb_runtime rt = {.major = 3, .minor = 1};
	struct rb_iseq_cache *c = rb_iseq_cache__new();
	static uint64_t iseq[8], body[32], label[8], path[8], code[4];
	static int32_t info[4] = {7};
	static char long_label[256], want[RB_NAME_MAX];
	struct rb_frame_name nm;
	size_t k = 0;

	CHECK(c != NULL && o != NULL);
	if (!c || !o)
		return;
	rt.off = *o;
	for (int i = 0; i < 100; i++)
		memcpy(long_label + 2 * i, "\xc3\xb6", 2); /* 'ö' */
	while (k + 2 < RB_NAME_MAX)			   /* 63 of them fit with the NUL, not 64 */
		memcpy(want + k, "\xc3\xb6", 2), k += 2;
	iseq[0] = RB_T_IMEMO | (uint64_t)RB_IMEMO_ISEQ << RB_IMEMO_SHIFT;
	iseq[o->iseq_body / 8] = (uint64_t)(uintptr_t)body;
	put32(body, o->body_iseq_size, 2);
	put32(body, o->body_insns_size, 1);
	body[o->body_iseq_encoded / 8] = (uint64_t)(uintptr_t)code;
	body[o->body_first_lineno / 8] = 5 << 1 | 1;
	body[o->body_label / 8] = (uint64_t)(uintptr_t)label;
	body[o->body_base_label / 8] = (uint64_t)(uintptr_t)label;
	body[o->body_pathobj / 8] = (uint64_t)(uintptr_t)path;
	body[o->body_insns_info / 8] = (uint64_t)(uintptr_t)info;
	fake_str(label, o, long_label);
	fake_str(path, o,
		 "a\x01"
		 "b\xff\xc3.rb");
	CHECK_EQ_INT(rb_iseq_resolve(c, getpid(), &rt, (uint64_t)(uintptr_t)iseq,
				     (uint64_t)(uintptr_t)(code + 1), 0, &nm),
		     0);
	CHECK_STR(nm.label, want);
	CHECK_STR(nm.path, "a?b??.rb");
	CHECK_EQ_INT(nm.line, 7);
	/* a pc outside the iseq: its first line */
	rb_iseq_cache__forget_pid(c, getpid());
	CHECK_EQ_INT(rb_iseq_resolve(c, getpid(), &rt, (uint64_t)(uintptr_t)iseq, 8, 0, &nm), 0);
	CHECK_EQ_INT(nm.line, 5);
	rb_iseq_cache__free(c);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A word-aligned pointer into the first 28 KiB of the pool. */
static uint64_t pool_ptr(uint64_t base, uint64_t r)
{
	return base + 8 * ((r >> 8) % 3584);
}

/*
 * An iseq at the pool's start that passes the first checks: flags, sizes,
 * a String label, a String or Array path, and (half the time) a sorted
 * positions array; the rest random. Objects live past 28 KiB.
 */
static void plausible_iseq(uint64_t *pool, uint64_t base, const struct rb_offsets *o, uint64_t *s)
{
	uint32_t b = 512, size = xorshift(s) % 200 + 1, n = xorshift(s) % (size + 1);
	uint64_t *str = pool + 3600, *ary = pool + 3620, *pos = pool + 3700;

	pool[0] = RB_T_IMEMO | (uint64_t)RB_IMEMO_ISEQ << RB_IMEMO_SHIFT;
	pool[o->iseq_body / 8] = base + b;
	put32(pool, b + o->body_type, xorshift(s) % 4);
	put32(pool, b + o->body_iseq_size, size);
	put32(pool, b + o->body_insns_size, n);
	pool[(b + o->body_iseq_encoded) / 8] = base;
	pool[(b + o->body_first_lineno) / 8] = (xorshift(s) % 1000) << 1 | 1;
	pool[(b + o->body_label) / 8] = (uint64_t)(uintptr_t)str;
	pool[(b + o->body_base_label) / 8] = (uint64_t)(uintptr_t)str;
	pool[(b + o->body_pathobj) / 8] = (uint64_t)(uintptr_t)(xorshift(s) % 2 ? str : ary);
	pool[(b + o->body_insns_info) / 8] = pool_ptr(base, xorshift(s));
	pool[(b + o->body_insns_pos) / 8] = xorshift(s) % 2 ? 0 : (uint64_t)(uintptr_t)pos;
	pool[(b + o->body_insns_succ) / 8] = pool_ptr(base, xorshift(s));
	/* flags keep their random bits: embedded or not, any length */
	str[0] = (str[0] & ~0x1full) | RB_T_STRING;
	str[o->rstring_len / 8] %= 400;
	str[o->rstring_ptr / 8] = pool_ptr(base, xorshift(s));
	ary[0] = (ary[0] & ~0x1full) | RB_T_ARRAY;
	ary[o->rarray_embed / 8] = (uint64_t)(uintptr_t)str;
	ary[o->rarray_len / 8] %= 4;
	ary[o->rarray_ptr / 8] = (uint64_t)(uintptr_t)(ary + o->rarray_embed / 8);
	for (uint32_t i = 0, p = 0; i < n && i < 300; i++, p += xorshift(s) % 3 + 1)
		put32(pos, 4 * i, i ? p : 0);
}

/*
 * Garbage in this process: random bytes as an iseq, then iseqs with the
 * right flags whose body, strings and tables are random, with pointers
 * that point back into the garbage. Errors or bounded names, never a crash
 * (the ASan build checks every read and write).
 */
UNIT_TEST(garbage_is_refused)
{
	static uint64_t pool[4096];
	const struct rb_offsets *o = ruby_offsets_builtin(3, 1);
	struct rb_runtime rt = {.major = 3, .minor = 1};
	struct rb_iseq_cache *c = rb_iseq_cache__new();
	uint64_t s = 0x243f6a8885a308d3ull, base = (uint64_t)(uintptr_t)pool;
	struct rb_frame_name nm;
	int ok = 0, refused = 0;

	CHECK(c != NULL && o != NULL);
	if (!c || !o)
		return;
	rt.off = *o;
	for (int round = 0; round < 4000; round++) {
		for (size_t i = 0; i < 4096; i++) {
			uint64_t r = xorshift(&s);

			/* a third of the words point into the pool */
			pool[i] = r % 3 ? r : base + (r >> 8) % (sizeof(pool) - 64);
		}
		if (round % 2)
			plausible_iseq(pool, base, o, &s);
		if (rb_iseq_resolve(c, getpid(), &rt, base + (round % 2 ? 0 : 8 * (round % 64)),
				    xorshift(&s), 0, &nm) == 0) {
			ok++;
			CHECK(strlen(nm.label) < RB_NAME_MAX && strlen(nm.path) < RB_PATH_MAX);
		} else {
			refused += round % 2 == 0;
		}
		/* the pool changes: do not let the cache answer */
		rb_iseq_cache__forget_pid(c, getpid());
	}
	fprintf(stderr, "  garbage: %d named, %d of 2000 random ones refused\n", ok, refused);
	CHECK(refused >= 1990);
	CHECK(ok > 0); /* the plausible ones reach the end, some all through */
	/* offsets that are not a CRuby's are refused before anything is read */
	rt.off.body_label = RB_OFF_NONE;
	CHECK_EQ_INT(rb_iseq_resolve(c, getpid(), &rt, base, 0, 0, &nm), -EINVAL);
	rb_iseq_cache__free(c);
}

UNIT_MAIN()
