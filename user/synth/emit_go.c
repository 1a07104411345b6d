// SPDX-License-Identifier: GPL-2.0
/*
 * emit_go.c - the Go backend of `liveprof emit`.
 *
 * One Go function per profile name, marked //go:noinline so that each keeps
 * its frame (Go keeps frame pointers on amd64 and never turns calls into
 * jumps). Profilers see them as "main.NAME". The file builds offline with
 * the standard library only, in GOPATH mode (GO111MODULE=off), so it needs
 * no go.mod.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "user/synth/emit.h"

static const char *const go_reserved[] = {
	/* Keywords. */
	"break",
	"case",
	"chan",
	"const",
	"continue",
	"default",
	"defer",
	"else",
	"fallthrough",
	"for",
	"func",
	"go",
	"goto",
	"if",
	"import",
	"interface",
	"map",
	"package",
	"range",
	"return",
	"select",
	"struct",
	"switch",
	"type",
	"var",
	/* Predeclared identifiers. */
	"any",
	"bool",
	"byte",
	"comparable",
	"complex64",
	"complex128",
	"error",
	"float32",
	"float64",
	"int",
	"int8",
	"int16",
	"int32",
	"int64",
	"rune",
	"string",
	"uint",
	"uint8",
	"uint16",
	"uint32",
	"uint64",
	"uintptr",
	"true",
	"false",
	"iota",
	"nil",
	"append",
	"cap",
	"clear",
	"close",
	"complex",
	"copy",
	"delete",
	"imag",
	"len",
	"make",
	"max",
	"min",
	"new",
	"panic",
	"print",
	"println",
	"real",
	"recover",
	/* Special functions and the packages the program imports. */
	"main",
	"init",
	"_",
	"fmt",
	"os",
	"runtime",
	"strconv",
	"sync",
	"time",
	NULL,
};

static const struct emit_ident_rules go_rules = {
	.reserved = go_reserved,
	.internal_prefix = "lp",
	.suffix = "_fn",
	.max_len = 200,
};

static const char go_runtime[] =
	"// lpState is one goroutine's state: the carried fractions of iterations,\n"
	"// so that nodes with few samples get exactly their share in the long run.\n"
	"type lpState struct {\n"
	"\tcarry         []float64\n"
	"\titersPerUnit float64\n"
	"\tsink          uint64\n"
	"\t// The busy loop's multiplier and increment, read from here so that\n"
	"\t// they sit in registers: as constants, Go rematerialises them in the\n"
	"\t// loop (two 10-byte moves), and a 35-byte loop crosses a 64-byte line\n"
	"\t// in every other function (functions are 32-byte aligned), which ran\n"
	"\t// 14% slower on a busy machine and skewed those functions' shares.\n"
	"\tmul, add uint64\n"
	"}\n"
	"\n"
	"// lpSink keeps the busy loops' results alive.\n"
	"var lpSink uint64\n"
	"\n"
	"// iters is the length of a node's busy loop this round. The loop itself is\n"
	"// written out in every function, so that its samples land there and not in\n"
	"// a helper; it is a dependent multiply-add chain, whose speed does not\n"
	"// depend on code alignment.\n"
	"func (st *lpState) iters(node int) uint64 {\n"
	"\twant := float64(lpSelf[node])*st.itersPerUnit + st.carry[node]\n"
	"\tn := uint64(want)\n"
	"\tst.carry[node] = want - float64(n)\n"
	"\treturn n\n"
	"}\n"
	"\n"
	"func lpCalibrate() float64 {\n"
	"\tbest := 0.0\n"
	"\tx := uint64(1)\n"
	"\tfor k := 0; k < 5; k++ {\n"
	"\t\tt0 := time.Now()\n"
	"\t\tconst n = 1 << 20\n"
	"\t\tfor i := 0; i < n; i++ {\n"
	"\t\t\tx = x*6364136223846793005 + 1442695040888963407\n"
	"\t\t}\n"
	"\t\tif dt := time.Since(t0).Seconds(); dt > 0 && n/dt > best {\n"
	"\t\t\tbest = n / dt\n"
	"\t\t}\n"
	"\t}\n"
	"\tlpSink += x\n"
	"\tif best == 0 {\n"
	"\t\tbest = 1e9\n"
	"\t}\n"
	"\treturn best\n"
	"}\n"
	"\n"
	"// lpThreadCPU is the CPU time of the calling thread, in seconds.\n"
	"func lpThreadCPU() float64 {\n"
	"\tvar ru syscall.Rusage\n"
	"\tsyscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)\n"
	"\treturn float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9\n"
	"}\n"
	"\n"
	"func lpThread(base float64, deadline time.Time, utilization float64, wg *sync.WaitGroup) "
	"{\n"
	"\tdefer wg.Done()\n"
	"\tst := &lpState{carry: make([]float64, len(lpSelf)),\n"
	"\t\tmul: 6364136223846793005, add: 1442695040888963407}\n"
	"\t// The thread's own CPU time needs the goroutine pinned to its thread.\n"
	"\truntime.LockOSThread()\n"
	"\twall0, cpu0 := time.Now(), lpThreadCPU()\n"
	"\trng := uint64(0x9e3779b97f4a7c15)\n"
	"\tfor {\n"
	"\t\tif !deadline.IsZero() && time.Now().After(deadline) {\n"
	"\t\t\tbreak\n"
	"\t\t}\n"
	"\t\t// Rounds are short and of random length (0.5x to 1.5x, xorshift),\n"
	"\t\t// so a sampling clock meets every point of a round equally often.\n"
	"\t\t// Rounds of a fixed ~10 ms with lengths from a golden-ratio\n"
	"\t\t// sequence locked in phase with 99 Hz (10.1 ms) whenever the\n"
	"\t\t// calibration made the mean round land near that period: one\n"
	"\t\t// function got 38% of the samples instead of 30%. Scaling a\n"
	"\t\t// whole round keeps every share.\n"
	"\t\trng ^= rng << 13\n"
	"\t\trng ^= rng >> 7\n"
	"\t\trng ^= rng << 17\n"
	"\t\tst.itersPerUnit = base * (0.5 + float64(rng>>11)/9007199254740992.0)\n"
	"\t\tlpRoot(st)\n"
	"\t\tif utilization >= 1 {\n"
	"\t\t\tcontinue\n"
	"\t\t}\n"
	"\t\t// Sleep until the CPU used so far is U of the time elapsed.\n"
	"\t\tdue := wall0.Add(time.Duration((lpThreadCPU() - cpu0) / utilization * 1e9))\n"
	"\t\tif wait := time.Until(due); wait > 0 {\n"
	"\t\t\ttime.Sleep(wait)\n"
	"\t\t} else if wait < -time.Second {\n"
	"\t\t\twall0, cpu0 = time.Now(), lpThreadCPU()\n"
	"\t\t}\n"
	"\t}\n"
	"\tlpSink += st.sink\n"
	"}\n"
	"\n"
	"func main() {\n"
	"\tseconds, utilization, threads := float64(lpSeconds), float64(lpUtilization), "
	"int(lpThreads)\n"
	"\tvar err error\n"
	"\tif len(os.Args) > 1 {\n"
	"\t\tseconds, err = strconv.ParseFloat(os.Args[1], 64)\n"
	"\t}\n"
	"\tif err == nil && len(os.Args) > 2 {\n"
	"\t\tutilization, err = strconv.ParseFloat(os.Args[2], 64)\n"
	"\t}\n"
	"\tif err == nil && len(os.Args) > 3 {\n"
	"\t\tthreads, err = strconv.Atoi(os.Args[3])\n"
	"\t}\n"
	"\tif err != nil || seconds < 0 || !(utilization > 0 && utilization <= 1) || threads < 1 "
	"{\n"
	"\t\tfmt.Fprintf(os.Stderr, \"usage: %s [SECONDS (0 = forever) [UTILIZATION (0-1] "
	"[THREADS]]]\\n\", os.Args[0])\n"
	"\t\tos.Exit(2)\n"
	"\t}\n"
	"\t// One round is about 1 ms of CPU, whatever the profile's total, or\n"
	"\t// 10 us per tree node in big trees, so that the calls and the\n"
	"\t// bookkeeping (which profilers see in the callers) stay near 1%.\n"
	"\tround := 0.001\n"
	"\tif r := float64(len(lpSelf)) * 10e-6; r > round {\n"
	"\t\tround = r\n"
	"\t}\n"
	"\tbase := lpCalibrate() * round / lpTotal\n"
	"\tvar deadline time.Time\n"
	"\tif seconds > 0 {\n"
	"\t\tdeadline = time.Now().Add(time.Duration(seconds * 1e9))\n"
	"\t}\n"
	"\tvar wg sync.WaitGroup\n"
	"\tfor i := 0; i < threads; i++ {\n"
	"\t\twg.Add(1)\n"
	"\t\tgo lpThread(base, deadline, utilization, &wg)\n"
	"\t}\n"
	"\twg.Wait()\n"
	"\truntime.KeepAlive(lpSink)\n"
	"}\n";

static void go_write_calls(FILE *f, const struct emit_tree *t, uint32_t id, const char *indent)
{
	uint32_t c;

	for (c = t->nodes[id].first_child; c != EMIT_NONE; c = t->nodes[c].next_sibling) {
		fprintf(f, "%s%s(st, %u)\n", indent, t->names[t->nodes[c].name].ident, c);
		fprintf(f, "%sst.sink++\n", indent);
	}
}

static int go_write(FILE *f, const struct emit_tree *t, const struct emit_opts *o)
{
	char build[2048], prog[1024];
	size_t i, j;

	fprintf(f, "// Synthetic workload written by `liveprof emit --lang go` from '");
	emit_comment_text(f, o->source ? o->source : "-", NULL);
	fprintf(f,
		"'.\n"
		"//\n"
		"// It reproduces that profile's call tree: %zu functions, %zu tree nodes,\n"
		"// %llu samples. Each function does the self work of its tree nodes (a\n"
		"// calibrated busy loop) and calls their children once per round.\n"
		"// Profilers show the functions as main.NAME.\n"
		"//\n",
		t->n_names, t->n_nodes - 1, (unsigned long long)t->total);
	fprintf(f, "// Build: %s\n", emit_build_command("go", o->out_path, build, sizeof(build)));
	fprintf(f, "// Run:   %s [SECONDS [UTILIZATION [THREADS]]]\n",
		emit_prog_path(o->out_path, prog, sizeof(prog)));
	fprintf(f, "//        (defaults: %g s (0 = forever), utilization %g, %u goroutine%s)\n",
		o->duration_s, o->utilization, o->threads, o->threads == 1 ? "" : "s");
	emit_write_renames(f, t, "// ", NULL);
	fprintf(f, "\npackage main\n\n"
		   "import (\n\t\"fmt\"\n\t\"os\"\n\t\"runtime\"\n\t\"strconv\"\n\t\"sync\"\n"
		   "\t\"syscall\"\n\t\"time\"\n)\n\n");
	fprintf(f,
		"const (\n\tlpSeconds     = %.6g\n\tlpUtilization = %.6g\n\tlpThreads     = %u\n"
		"\tlpTotal       = %llu.0\n)\n\n",
		o->duration_s, o->utilization, o->threads, (unsigned long long)t->total);
	fprintf(f, "// lpSelf holds the samples that ended at each tree node: its self work per "
		   "round.\n"
		   "var lpSelf = [...]uint64{");
	for (i = 0; i < t->n_nodes; i++)
		fprintf(f, "%s%llu,", i % 12 ? " " : "\n\t", (unsigned long long)t->nodes[i].self);
	fprintf(f, "\n}\n\n");
	fputs(go_runtime, f);

	for (i = 0; i < t->n_names; i++) {
		const struct emit_name *nm = &t->names[i];

		fprintf(f, "\n// %s has %u place%s in the tree.\n//\n//go:noinline\n", nm->ident,
			nm->count, nm->count == 1 ? "" : "s");
		fprintf(f, "func %s(st *lpState, node int) {\n\tswitch node {\n", nm->ident);
		for (j = 0; j < nm->count; j++) {
			uint32_t id = t->name_nodes[nm->first + j];
			const struct emit_node *n = &t->nodes[id];

			fprintf(f, "\tcase %u: // self %llu of %llu\n", id,
				(unsigned long long)n->self, (unsigned long long)n->total);
			fprintf(f, "\t\tx, m, a, n := st.sink, st.mul, st.add, st.iters(%u)\n", id);
			fprintf(f, "\t\tfor i := uint64(0); i < n; i++ {\n"
				   "\t\t\tx = x*m + a\n"
				   "\t\t}\n\t\tst.sink = x\n");
			go_write_calls(f, t, id, "\t\t");
		}
		fprintf(f, "\t}\n\tst.sink++\n}\n");
	}
	fprintf(f, "\n// lpRoot is one round: the root's children once each.\n//\n//go:noinline\n"
		   "func lpRoot(st *lpState) {\n");
	go_write_calls(f, t, 0, "\t");
	fprintf(f, "}\n");
	return ferror(f) ? -EIO : 0;
}

const struct emit_backend emit_backend_go = {
	.lang = "go",
	.rules = &go_rules,
	.write = go_write,
};
