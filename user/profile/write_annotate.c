// SPDX-License-Identifier: GPL-2.0
/*
 * write_annotate.c - samples per source line and per instruction, like
 * perf annotate --stdio, for the hot functions of a profile.
 *
 * The source section shows the lines of the function's own file that its
 * code spans; code inlined from elsewhere is counted under the line that
 * calls it and named there. Shares are of the function's own samples:
 * self% of its self samples, total% of its total samples. Marks: L a
 * line holding a backward jump (a loop), B a forward conditional jump (a
 * branch), I code inlined at this line; the nesting of lexical blocks and
 * inlined scopes indents the mark column.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "user/profile/annotate.h"
#include "user/profile/writers.h"

static double pct(uint64_t n, uint64_t of)
{
	return of ? 100.0 * (double)n / (double)of : 0.0;
}

static void counts(FILE *out, uint64_t self, uint64_t fself, uint64_t total, uint64_t ftotal)
{
	if (!self && !total) {
		fprintf(out, "%8s %7s %8s %7s", "", "", "", "");
		return;
	}
	fprintf(out, "%8" PRIu64 " %6.2f%% %8" PRIu64 " %6.2f%%", self, pct(self, fself), total,
		pct(total, ftotal));
}

static void header(FILE *out, const struct annotate *a, const struct annot_func *f)
{
	const struct src_func *sf = f->sf;

	fprintf(out, "\n== %s  in %s (%s) [0x%" PRIx64 ", 0x%" PRIx64 ")\n", sf->name, f->module,
		f->path, sf->lo, sf->hi);
	fprintf(out,
		"   samples: self %" PRIu64 " (%.2f%% of all), total %" PRIu64 " (%.2f%% of all)\n",
		f->self, pct(f->self, a->total), f->total, pct(f->total, a->total));
	fprintf(out, "   debug info: %s\n",
		sf->debug_from ? sf->debug_from : "none (no DWARF in the binary, no debug file)");
	if (f->has_source)
		fprintf(out, "   source: %s%s\n", sf->where,
			sf->mismatch ? "  [MISMATCH: the file is shorter than the code's lines; "
				       "not the source of this build]"
				     : "");
	else
		fprintf(out, "   source: not found; looked at %s\n", sf->where);
}

static void marks(FILE *out, const struct annot_line *l)
{
	char m[8];
	int d = l->depth < 4 ? l->depth : 4;

	snprintf(m, sizeof(m), "%c%c%c", l->loop ? 'L' : ' ', l->branch ? 'B' : ' ',
		 l->inlined ? 'I' : ' ');
	fprintf(out, " %*s%s%*s", d, "", m, 4 - d, "");
}

/* @src with tabs expanded to 8 columns, cleaned for printing; caller frees. */
static char *expand(const char *src)
{
	char buf[1024];
	size_t n = 0;

	for (; *src && n + 9 < sizeof(buf); src++) {
		if (*src == '\t') {
			do
				buf[n++] = ' ';
			while (n % 8);
		} else {
			buf[n++] = *src;
		}
	}
	buf[n] = '\0';
	return writer__clean_utf8(buf);
}

static void source_section(FILE *out, const struct annot_func *f)
{
	const struct src_func *sf = f->sf;
	bool text = f->has_source && !sf->mismatch;

	fprintf(out, "\n    self   self%%    total  total%%   line marks   source\n");
	for (int i = 0; i < f->n_lines; i++) {
		const struct annot_line *l = &f->lines[i];
		const char *src = text && l->line <= sf->n_lines ? sf->lines[l->line - 1] : "";
		char *clean = expand(src);

		counts(out, l->self, f->self, l->total, f->total);
		fprintf(out, " %6d", l->line);
		marks(out, l);
		fprintf(out, " %s", clean ? clean : "");
		if (l->inlined)
			fprintf(out, "    [inlined: %s]", l->inlined);
		fputc('\n', out);
		free(clean);
	}
	if (f->unplaced_self || f->unplaced_total) {
		counts(out, f->unplaced_self, f->self, f->unplaced_total, f->total);
		fprintf(out, "      ?          (no line in %s)\n", sf->file ? sf->file : "DWARF");
	}
}

static void insn_section(FILE *out, const struct annot_func *f)
{
	const struct src_func *sf = f->sf;
	char buf[160];

	fprintf(out, "\n    self   self%%    total  total%%   address   line   bytes / flow\n");
	for (size_t i = 0; i < sf->n_insns; i++) {
		const struct src_insn *in = &sf->insns[i];

		src_func__format_insn(sf, in, buf, sizeof(buf));
		counts(out, f->insn_self[i], f->self, f->insn_total[i], f->total);
		fprintf(out, " %9" PRIx64 " %6d   %s", in->vaddr, in->line, buf);
		if (in->inl_func)
			fprintf(out, "  [%s:%d in %s]",
				in->inl_file ? strrchr(in->inl_file, '/')
						       ? strrchr(in->inl_file, '/') + 1
						       : in->inl_file
					     : "?",
				in->inl_line, in->inl_func);
		fputc('\n', out);
	}
	if (sf->decode_error)
		fprintf(out, "    (listing ends at a byte the decoder cannot read)\n");
}

int write_annotate(const struct profile *p, FILE *out, const struct annotate_opts *o)
{
	struct annotate *a;
	int err = annotate__build(p, o, &a);

	if (err)
		return err;
	fprintf(out, "# liveprof annotate: %s, %" PRIu64 " samples\n", p->name ? p->name : "",
		p->total_count);
	fprintf(out, "# self%%: share of the function's self samples; total%%: of its total "
		     "samples\n# marks: L loop (backward jump), B branch (conditional jump), I "
		     "inlined call; indented by lexical-block depth\n");
	if (!a->n)
		fprintf(out, "# no function to annotate%s%s%s\n", o && o->func ? " named '" : "",
			o && o->func ? o->func : "", o && o->func ? "'" : "");
	for (size_t i = 0; i < a->n; i++) {
		header(out, a, &a->funcs[i]);
		/* without the text, the line numbers are in the listing below */
		if (a->funcs[i].n_lines && a->funcs[i].has_source)
			source_section(out, &a->funcs[i]);
		insn_section(out, &a->funcs[i]);
	}
	annotate__free(a);
	return ferror(out) ? -EIO : 0;
}
