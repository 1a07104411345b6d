// SPDX-License-Identifier: GPL-2.0
/*
 * write_svg.c - self-contained interactive flamegraphs, plain and differential.
 *
 * Samples are merged into a tree of frame paths keyed by (parent, name,
 * kind) in svg_tree.c. Here children are drawn in name order (as
 * flamegraph.pl does), and each drawn frame becomes one flat <g class="f">
 * with its position as a fraction of the total in data attributes, so the
 * small script below can zoom by rescaling without knowing the tree.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "user/profile/svg_internal.h"
#include "user/profile/writers.h"
#include "user/util/util.h"

#define DEF_WIDTH   1200
#define DEF_MIN_PCT 0.1
#define FRAME_H	    16
#define PAD	    10
#define HEAD_H	    64
#define FOOT_H	    24
#define FONT_SIZE   12
#define CHAR_W	    7.0 /* average glyph width of the font at FONT_SIZE, for truncation */

/*
 * Write @s XML-escaped, at most @max_chars code points (0: no limit), with
 * ".." when cut. @s must be clean UTF-8 (writer__clean_utf8()).
 */
static void xml_text(FILE *out, const char *s, size_t max_chars)
{
	size_t chars = 0, total = 0;

	for (const unsigned char *u = (const unsigned char *)s; *u; u++)
		total += (*u & 0xc0) != 0x80;
	if (max_chars && total > max_chars) {
		if (max_chars < 3)
			return;
		max_chars -= 2;
	} else {
		max_chars = 0;
	}
	for (const unsigned char *u = (const unsigned char *)s; *u; u++) {
		if ((*u & 0xc0) != 0x80 && max_chars && chars++ == max_chars) {
			fputs("..", out);
			return;
		}
		switch (*u) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs("&#39;", out);
			break;
		case 0xef:
			/* U+FFFE and U+FFFF are valid UTF-8 but not allowed in XML. */
			if (u[1] == 0xbf && (u[2] == 0xbe || u[2] == 0xbf)) {
				fputs("\xef\xbf\xbd", out);
				u += 2;
				break;
			}
			/* fall through */
		default:
			fputc(*u, out);
		}
	}
}

static void xml_clean_text(FILE *out, const char *s, size_t max_chars, int *err)
{
	char *c = writer__clean_utf8(s ? s : "");

	if (!c) {
		*err = -ENOMEM;
		return;
	}
	xml_text(out, c, max_chars);
	free(c);
}

int writer__xml_text(FILE *out, const char *s)
{
	int err = 0;

	xml_clean_text(out, s, 0, &err);
	return err;
}

struct rgb {
	unsigned r, g, b;
};

static struct rgb frame_colour(const struct node *n)
{
	uint64_t h = n->name_hash;
	/* Three independent-looking fractions from one hash: stable per name. */
	double v1 = (double)(h & 0xff) / 255.0, v2 = (double)((h >> 8) & 0xff) / 255.0,
	       v3 = (double)((h >> 16) & 0xff) / 255.0;

	if (n->offcpu * 2 > n->value)
		return (struct rgb){60 + 60 * v1, 110 + 60 * v2, 220 + 35 * v3};
	if (n->inlined)
		return (struct rgb){50 + 60 * v1, 165 + 55 * v1, 165 + 55 * v1};
	switch (n->kind) {
	case FRAME_KERNEL:
		return (struct rgb){60 + 60 * v1, 180 + 50 * v2, 180 + 50 * v2};
	case FRAME_MARKER:
		return (struct rgb){170 + 40 * v1, 140 + 40 * v1, 200 + 40 * v1};
	case FRAME_ROOT:
		return (struct rgb){200 + 20 * v1, 200 + 20 * v1, 200 + 20 * v1};
	default:
		return (struct rgb){205 + 50 * v3, 230 * v1, 55 * v2};
	}
}

struct svg {
	FILE *out;
	const struct svg_opts *o;
	struct tree t;
	uint32_t *first_child, *next_sibling; /* children in name order */
	uint64_t total, other_total;
	double max_delta; /* diff: largest |delta| among drawn frames */
	bool diff;
	const char *unit;
	int width, height;
	uint32_t max_depth;
	int err;
};

static double node_delta(const struct svg *g, const struct node *n)
{
	if (g->o->per_call)
		return (double)n->value / (double)g->o->slow_calls -
		       (double)n->other / (double)g->o->fast_calls;
	return (g->total ? (double)n->value / (double)g->total : 0) -
	       (g->other_total ? (double)n->other / (double)g->other_total : 0);
}

static struct rgb diff_colour(const struct svg *g, const struct node *n)
{
	double d = node_delta(g, n);
	double c = g->max_delta > 0 ? (d < 0 ? -d : d) / g->max_delta : 0;
	unsigned fade = 255 - (unsigned)(c * 200);

	if (c < 0.02)
		return (struct rgb){235, 235, 235};
	return d > 0 ? (struct rgb){255, fade, fade} : (struct rgb){fade, fade, 255};
}

static int child_cmp(const void *a, const void *b, void *arg)
{
	const struct tree *t = arg;
	const struct node *x = &t->nodes[*(const uint32_t *)a];
	const struct node *y = &t->nodes[*(const uint32_t *)b];
	int c = strcmp(x->name, y->name);

	return c ? c : (int)x->kind - (int)y->kind;
}

/* Link children in name order, dropping the ones too narrow to draw. */
static int link_children(struct svg *g, double min_value)
{
	struct tree *t = &g->t;
	uint32_t *order;
	size_t i;

	g->first_child = malloc(t->n * sizeof(uint32_t));
	g->next_sibling = malloc(t->n * sizeof(uint32_t));
	order = malloc(t->n * sizeof(uint32_t));
	if (!g->first_child || !g->next_sibling || !order) {
		free(order);
		return -ENOMEM;
	}
	for (i = 0; i < t->n; i++) {
		g->first_child[i] = NO_NODE;
		g->next_sibling[i] = NO_NODE;
		order[i] = i;
	}
	qsort_r(order, t->n, sizeof(*order), child_cmp, t);
	/* Walk backwards so that prepending leaves each list in order. */
	for (i = t->n; i-- > 0;) {
		const struct node *n = &t->nodes[order[i]];

		if (n->parent == NO_NODE || (double)n->value < min_value)
			continue;
		g->next_sibling[order[i]] = g->first_child[n->parent];
		g->first_child[n->parent] = order[i];
	}
	free(order);
	return 0;
}

/* Depth of the deepest drawn frame and, for a diff, the largest |delta|. */
static void measure(struct svg *g)
{
	uint32_t *stack = malloc((g->t.n + 1) * sizeof(*stack));
	size_t sp = 0;

	if (!stack) {
		g->err = -ENOMEM;
		return;
	}
	stack[sp++] = 0;
	while (sp) {
		uint32_t i = stack[--sp];
		const struct node *n = &g->t.nodes[i];
		double d;

		if (n->depth > g->max_depth)
			g->max_depth = n->depth;
		if (g->diff && i) {
			d = node_delta(g, n);
			d = d < 0 ? -d : d;
			if (d > g->max_delta)
				g->max_delta = d;
		}
		for (uint32_t c = g->first_child[i]; c != NO_NODE; c = g->next_sibling[c])
			stack[sp++] = c;
	}
	free(stack);
}

static void fmt_value(const struct svg *g, char *buf, size_t size, uint64_t v)
{
	snprintf(buf, size, "%llu %s", (unsigned long long)v, g->unit);
}

static void draw_frame(struct svg *g, uint32_t i, uint64_t x_value)
{
	const struct node *n = &g->t.nodes[i];
	double fw = g->width - 2 * PAD;
	double x = (double)x_value / (double)g->total, w = (double)n->value / (double)g->total;
	double y = g->o->icicle ? HEAD_H + (double)n->depth * FRAME_H
				: g->height - FOOT_H - (double)(n->depth + 1) * FRAME_H;
	double pct = 100.0 * w;
	struct rgb c = g->diff ? diff_colour(g, n) : frame_colour(n);
	size_t fit = (size_t)((w * fw - 6) / CHAR_W);
	char val[64];
	FILE *out = g->out;

	fmt_value(g, val, sizeof(val), n->value);
	fprintf(out, "<g class=\"f\" data-x=\"%.9f\" data-w=\"%.9f\" data-d=\"%u\" data-n=\"", x, w,
		n->depth);
	xml_clean_text(out, n->name, 0, &g->err);
	fprintf(out, "\" data-v=\"%llu\"><title>", (unsigned long long)n->value);
	xml_clean_text(out, n->name, 0, &g->err);
	if (n->kind == FRAME_KERNEL)
		fputs(" [kernel]", out);
	if (n->inlined)
		fputs(" [inlined]", out);
	if (g->diff) {
		double so = g->other_total ? 100.0 * n->other / g->other_total : 0;

		fprintf(out, " (%s, slow %.2f%%, fast %.2f%%, %+.2f%%", val, pct, so, pct - so);
		if (g->o->per_call)
			fprintf(out, "; per call: slow %.1f, fast %.1f",
				(double)n->value / g->o->slow_calls,
				(double)n->other / g->o->fast_calls);
		fputs(")", out);
	} else {
		fprintf(out, " (%s, %.2f%%", val, pct);
		if (n->offcpu)
			fprintf(out, ", off-CPU %.2f%%", 100.0 * n->offcpu / n->value);
		fputs(")", out);
	}
	fprintf(out,
		"</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
		"fill=\"rgb(%u,%u,%u)\" rx=\"2\"/><text x=\"%.2f\" y=\"%.1f\">",
		PAD + x * fw, y, w * fw, FRAME_H - 1, c.r, c.g, c.b, PAD + x * fw + 3,
		y + FRAME_H - 4.5);
	if (fit >= 3)
		xml_clean_text(out, n->name, fit, &g->err);
	fputs("</text></g>\n", out);
}

static void draw_frames(struct svg *g)
{
	/* Explicit stacks: hostile profiles can be deeper than the C stack. */
	uint32_t *stack = malloc((g->t.n + 1) * sizeof(*stack));
	uint64_t *xs = malloc((g->t.n + 1) * sizeof(*xs));
	size_t sp = 0;

	if (!stack || !xs) {
		free(stack);
		free(xs);
		g->err = -ENOMEM;
		return;
	}
	stack[sp] = 0;
	xs[sp++] = 0;
	while (sp) {
		uint32_t i = stack[--sp];
		uint64_t x = xs[sp], cx = x;
		size_t first = sp;

		draw_frame(g, i, x);
		for (uint32_t c = g->first_child[i]; c != NO_NODE; c = g->next_sibling[c]) {
			stack[sp] = c;
			xs[sp++] = cx;
			cx += g->t.nodes[c].value;
		}
		/* Keep document order left to right. */
		for (size_t a = first, b = sp; a + 1 < b; a++, b--) {
			uint32_t ts = stack[a];
			uint64_t tx = xs[a];

			stack[a] = stack[b - 1];
			xs[a] = xs[b - 1];
			stack[b - 1] = ts;
			xs[b - 1] = tx;
		}
	}
	free(stack);
	free(xs);
}

static const char svg_script[] =
	"var F=[],fw,det,mat,rz,CW="
	"7"
	",zoomed=null,searchRe=null;\n"
	"function init(){det=document.getElementById('details');"
	"mat=document.getElementById('matched');rz=document.getElementById('unzoom');\n"
	" fw=+document.documentElement.getAttribute('data-fw');\n"
	" var gs=document.querySelectorAll('g.f');\n"
	" for(var i=0;i<gs.length;i++){var g=gs[i];var f={g:g,x:+g.getAttribute('data-x'),"
	"w:+g.getAttribute('data-w'),d:+g.getAttribute('data-d'),n:g.getAttribute('data-n'),"
	"r:g.querySelector('rect'),t:g.querySelector('text'),tip:g.querySelector('title')"
	".textContent};f.fill=f.r.getAttribute('fill');F.push(f);(function(f){\n"
	"  g.addEventListener('mouseover',function(){det.textContent=f.tip;});\n"
	"  g.addEventListener('mouseout',function(){det.textContent=' ';});\n"
	"  g.addEventListener('click',function(){zoom(f);});})(f);}\n"
	" rz.addEventListener('click',function(){zoom(null);});\n"
	" document.getElementById('search').addEventListener('click',function(){search();});\n"
	" window.addEventListener('keydown',function(e){if((e.ctrlKey||e.metaKey)&&"
	"(e.key=='f'||e.key=='F')){e.preventDefault();search();}"
	"else if(e.key=='Escape'){clearSearch();}});}\n"
	"function fit(f,x,w){var px=10+x*fw;f.r.setAttribute('x',px.toFixed(2));"
	"f.r.setAttribute('width',(w*fw).toFixed(2));f.t.setAttribute('x',(px+3).toFixed(2));\n"
	" var n=Math.floor((w*fw-6)/CW),s=f.n;if(n<3)s='';else if(s.length>n)"
	"s=s.substring(0,n-2)+'..';f.t.textContent=s;}\n"
	"function zoom(z){var e=1e-9;zoomed=z;rz.style.display=z?'inline':'none';\n"
	" for(var i=0;i<F.length;i++){var f=F[i];\n"
	"  if(!z){f.g.style.display='';f.g.style.opacity='';fit(f,f.x,f.w);continue;}\n"
	"  if(f.d>=z.d&&f.x>=z.x-e&&f.x+f.w<=z.x+z.w+e){f.g.style.display='';f.g.style.opacity='';"
	"fit(f,(f.x-z.x)/z.w,f.w/z.w);}\n"
	"  else if(f.d<z.d&&f.x<=z.x+e&&f.x+f.w>=z.x+z.w-e){f.g.style.display='';"
	"f.g.style.opacity='0.6';fit(f,0,1);}\n"
	"  else f.g.style.display='none';}\n"
	" if(searchRe)mark();}\n"
	"function clearSearch(){searchRe=null;for(var i=0;i<F.length;i++)"
	"F[i].r.setAttribute('fill',F[i].fill);mat.textContent=' ';}\n"
	"function search(){var s=prompt('Search (regular expression)',searchRe?searchRe.source:'');"
	"if(s===null)return;if(s===''){clearSearch();return;}\n"
	" try{searchRe=new RegExp(s);}catch(err){alert('bad regular expression: '+err.message);"
	"return;}mark();}\n"
	"function mark(){var iv=[],i;for(i=0;i<F.length;i++){var f=F[i];"
	"if(searchRe.test(f.n)){f.r.setAttribute('fill','rgb(230,0,230)');iv.push([f.x,f.x+f.w]);}"
	"else f.r.setAttribute('fill',f.fill);}\n"
	" iv.sort(function(a,b){return a[0]-b[0];});var sum=0,end=-1;\n"
	" for(i=0;i<iv.length;i++){var a=Math.max(iv[i][0],end);if(iv[i][1]>a){sum+=iv[i][1]-a;"
	"end=iv[i][1];}}\n"
	" var base=zoomed?zoomed.w:1;if(zoomed){sum=0;end=-1;for(i=0;i<iv.length;i++){"
	"var lo=Math.max(iv[i][0],zoomed.x,end),hi=Math.min(iv[i][1],zoomed.x+zoomed.w);"
	"if(hi>lo){sum+=hi-lo;end=hi;}}}\n"
	" mat.textContent='Matched: '+(100*sum/base).toFixed(2)+'%';}\n"
	"init();\n";

static void write_doc(struct svg *g, const char *def_title)
{
	const struct svg_opts *o = g->o;
	FILE *out = g->out;
	int w = g->width, h;

	h = HEAD_H + FOOT_H + (int)(g->max_depth + 1) * FRAME_H;
	g->height = h;
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\" data-fw=\"%d\">\n",
		w, h, w, h, w - 2 * PAD);
	fprintf(out,
		"<style>text{font-family:Verdana,sans-serif;font-size:%dpx;fill:#000}"
		"g.f text{pointer-events:none}g.f:hover rect{stroke:#000;stroke-width:0.5}"
		".btn{cursor:pointer;fill:#336}.btn:hover{text-decoration:underline}"
		"#title{font-size:17px;text-anchor:middle}#sub{text-anchor:middle;fill:#555}"
		"</style>\n",
		FONT_SIZE);
	fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"%s\"/>\n",
		g->diff ? "#f8f8f8" : "#f4f1e8");
	fprintf(out, "<text id=\"title\" x=\"%d\" y=\"22\">", w / 2);
	xml_clean_text(out, o->title ? o->title : def_title, 0, &g->err);
	fputs("</text>\n", out);
	if (o->subtitle) {
		fprintf(out, "<text id=\"sub\" x=\"%d\" y=\"40\">", w / 2);
		xml_clean_text(out, o->subtitle, 0, &g->err);
		fputs("</text>\n", out);
	}
	fprintf(out,
		"<text id=\"unzoom\" class=\"btn\" x=\"%d\" y=\"22\" style=\"display:none\">"
		"Reset Zoom</text>\n"
		"<text id=\"search\" class=\"btn\" x=\"%d\" y=\"22\" "
		"text-anchor=\"end\">Search</text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
		PAD, w - PAD, PAD, h - 8, w - PAD, h - 8);
	if (!g->total) {
		fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no samples</text>\n",
			w / 2, HEAD_H + FRAME_H);
	} else {
		fputs("<g id=\"frames\">\n", out);
		draw_frames(g);
		fputs("</g>\n", out);
	}
	fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n",
		svg_script);
}

static int render(struct svg *g, const char *def_title)
{
	double min_pct = g->o->min_pct > 0 ? g->o->min_pct : DEF_MIN_PCT;
	int err;

	g->width = g->o->width > 2 * PAD + 100 ? g->o->width : DEF_WIDTH;
	g->unit = g->o->unit ? g->o->unit : g->o->use_weight ? "ns" : "samples";
	g->total = g->t.nodes[0].value;
	err = link_children(g, (double)g->total * min_pct / 100.0);
	if (!err) {
		measure(g);
		if (!g->err)
			write_doc(g, def_title);
		err = g->err;
	}
	free(g->first_child);
	free(g->next_sibling);
	if (!err && (fflush(g->out) || ferror(g->out)))
		err = -EIO;
	return err;
}

int write_svg(const struct profile *p, FILE *out, const struct svg_opts *o)
{
	struct svg_opts def = {0};
	struct svg g = {.out = out, .o = o ? o : &def};
	int err;

	err = svg_tree_build(&g.t, p, g.o->use_weight);
	if (err)
		return err;
	err = render(&g, "Flame Graph");
	svg_tree_free(&g.t);
	return err;
}

int write_svg_diff(const struct profile *slow, const struct profile *fast, FILE *out,
		   const struct svg_opts *o)
{
	struct svg_opts def = {0};
	struct svg g = {.out = out, .o = o ? o : &def, .diff = true};
	int err;

	if (g.o->per_call && (!g.o->slow_calls || !g.o->fast_calls))
		return -EINVAL;
	err = svg_tree_build(&g.t, slow, g.o->use_weight);
	if (err)
		return err;
	err = svg_tree_overlay(&g.t, fast, g.o->use_weight, &g.other_total);
	if (!err)
		err = render(&g, "Differential Flame Graph (slow vs fast)");
	svg_tree_free(&g.t);
	return err;
}
