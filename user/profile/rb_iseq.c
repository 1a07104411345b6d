// SPDX-License-Identifier: GPL-2.0
/*
 * rb_iseq.c - names of CRuby iseqs in a running process.
 *
 * Everything is read with process_vm_readv(2): the rb_iseq_t header, its
 * constant body, each name (a String: header, then the bytes if they are
 * not embedded), the insn info entries and the index from instruction
 * positions to entries, once per (pid, iseq). An iseq is accepted only if
 * its flags say T_IMEMO of type iseq; its strings only if theirs say
 * T_STRING; every size is checked against a bound before it sizes a read.
 *
 * Lines: CRuby 3.1 takes a frame's line from its pc (calc_pos in
 * vm_backtrace.c): pos = pc - iseq_encoded, minus one when it is not 0,
 * because pc already points past the instruction being executed; the entry
 * is the last insn info entry whose start position is <= pos. Once an iseq
 * is compiled, 3.1 frees insns_info.positions (unless built with
 * VM_CHECK_MODE) and keeps the starts only in a succinct bit vector
 * (iseq.c, VM_INSN_INFO_TABLE_IMPL 2): ranks of the first 54 positions in
 * six words of nine 7-bit counts, then blocks of 512 bits, each with its
 * rank, seven 9-bit ranks of its 64-bit words, and the words. This file
 * turns that back into the sorted start positions when it caches an iseq.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "rb_iseq.h"
#include "rb_string.h"
#include "bpf/liveprof.h"
#include "../util/util.h"
#include "../util/remote_mem.h"

/* Instructions (VALUEs) of the largest iseq liveprof reads; larger is
 * corruption. */
#define RB_ISEQ_MAX (1u << 20)
/* Insn info entries cached per iseq; the lines of later ones are unknown
 * and fall back to the first line. */
#define RB_INSNS_MAX (1u << 14)
/* Larger than any name liveprof reads: corruption. */
#define RB_STR_ABSURD (1LL << 24)
/* Member offsets past this are a broken offsets table, not a CRuby. */
#define RB_OFF_LIMIT 256
#define RB_HDR_MAX   (RB_OFF_LIMIT + 8)
/* The succinct index of iseq.c: immediate part, then 80-byte blocks. */
#define SUCC_IMM_POS	 54
#define SUCC_IMM_WORDS	 6
#define SUCC_BLOCK_BITS	 512
#define SUCC_BLOCK_BYTES 80

struct rb_iseq_entry {
	struct rb_iseq_entry *next; /* in its hash chain */
	uint64_t iseq;		    /* the key: pid and the iseq's address */
	pid_t pid;
	char label[RB_NAME_MAX];
	char base_label[RB_NAME_MAX];
	char path[RB_PATH_MAX];
	int first_lineno;
	uint16_t ident;	    /* hash of its identity, as BPF takes it (liveprof.h) */
	uint64_t encoded;   /* iseq_encoded */
	uint32_t iseq_size; /* in VALUEs */
	uint32_t n;	    /* insn info entries cached */
	bool truncated;	    /* the iseq has more: the last one's extent is unknown */
	uint32_t *pos;	    /* start position of each entry, increasing */
	int32_t *lines;	    /* line of each entry */
	uint64_t tail[];    /* pos and lines live here */
};

/* One chained hash table over (pid, iseq): forgetting a pid walks it all,
 * which happens once per process exit, not per sample. */
struct rb_iseq_cache {
	struct rb_iseq_entry **b;
	size_t nb; /* power of two, or 0 before the first insert */
	size_t n;
};

static size_t slot(const struct rb_iseq_cache *c, pid_t pid, uint64_t iseq)
{
	return lp_mix64(iseq ^ lp_mix64((uint64_t)pid)) & (c->nb - 1);
}

static struct rb_iseq_entry *cache_find(const struct rb_iseq_cache *c, pid_t pid, uint64_t iseq)
{
	if (!c->nb)
		return NULL;
	for (struct rb_iseq_entry *e = c->b[slot(c, pid, iseq)]; e; e = e->next)
		if (e->iseq == iseq && e->pid == pid)
			return e;
	return NULL;
}

/* Insert @e (its key not present); the table doubles at load 1. */
static int cache_insert(struct rb_iseq_cache *c, struct rb_iseq_entry *e)
{
	size_t i;

	if (c->n >= c->nb) {
		struct rb_iseq_cache g = {.nb = c->nb ? c->nb * 2 : 64, .n = c->n};

		g.b = calloc(g.nb, sizeof(*g.b));
		if (!g.b)
			return -ENOMEM;
		for (i = 0; i < c->nb; i++) {
			for (struct rb_iseq_entry *x = c->b[i], *next; x; x = next) {
				size_t j = slot(&g, x->pid, x->iseq);

				next = x->next;
				x->next = g.b[j];
				g.b[j] = x;
			}
		}
		free(c->b);
		*c = g;
	}
	i = slot(c, e->pid, e->iseq);
	e->next = c->b[i];
	c->b[i] = e;
	c->n++;
	return 0;
}

/* Take @e out of @c (it is in it). */
static void cache_remove(struct rb_iseq_cache *c, struct rb_iseq_entry *e)
{
	for (struct rb_iseq_entry **pp = &c->b[slot(c, e->pid, e->iseq)]; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			c->n--;
			return;
		}
	}
}

struct rb_iseq_cache *rb_iseq_cache__new(void)
{
	return calloc(1, sizeof(struct rb_iseq_cache));
}

void rb_iseq_cache__free(struct rb_iseq_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nb; i++) {
		for (struct rb_iseq_entry *x = c->b[i], *next; x; x = next) {
			next = x->next;
			free(x);
		}
	}
	free(c->b);
	free(c);
}

void rb_iseq_cache__forget_pid(struct rb_iseq_cache *c, pid_t pid)
{
	for (size_t i = 0; i < c->nb; i++) {
		for (struct rb_iseq_entry **pp = &c->b[i]; *pp;) {
			struct rb_iseq_entry *x = *pp;

			if (x->pid != pid) {
				pp = &x->next;
				continue;
			}
			*pp = x->next;
			c->n--;
			free(x);
		}
	}
}

/* Whether @flags are a live iseq's: T_IMEMO of type iseq (GC clears a
 * freed slot's flags, T_NONE; a slot reused says what it holds now). */
static bool iseq_flags(uint64_t flags)
{
	return (flags & RB_T_MASK) == RB_T_IMEMO &&
	       (flags >> RB_IMEMO_SHIFT & RB_IMEMO_MASK) == RB_IMEMO_ISEQ;
}

uint32_t rb_iseq_ident_offset(const struct rb_offsets *o)
{
	const uint32_t in_window[] = {o->body_type,	   o->body_iseq_size, o->body_iseq_encoded,
				      o->body_pathobj,	   o->body_label,     o->body_base_label,
				      o->body_first_lineno};

	/* 0 is the flags, never the body */
	if (!o->iseq_body || o->iseq_body % 8 || o->iseq_body + 8 > RB_OFF_LIMIT)
		return 0;
	for (size_t i = 0; i < sizeof(in_window) / sizeof(in_window[0]); i++)
		if (in_window[i] + 8 > 8 * (LP_RB_IDENT_WORDS - 1))
			return 0;
	return o->iseq_body;
}

/*
 * The hash of @iseq's identity as it is now (what rb_iseq_ident() in
 * bpf/ruby.bpf.h hashes), or 0 if it cannot be read or the slot holds no
 * iseq.
 */
static uint16_t read_ident(pid_t pid, const struct rb_offsets *o, uint64_t iseq)
{
	uint32_t at = rb_iseq_ident_offset(o);
	size_t len = 8 * (LP_RB_IDENT_WORDS - 1);
	uint8_t hdr[RB_HDR_MAX];
	__u64 w[LP_RB_IDENT_WORDS];

	if (!at || lp_remote_read(pid, iseq, hdr, at + 8, at + 8) < 0 ||
	    !iseq_flags(lp_get_u64(hdr, 0)))
		return 0;
	w[0] = lp_get_u64(hdr, at);
	if (!w[0] || lp_remote_read(pid, w[0], w + 1, len, len) < 0)
		return 0;
	return lp_rb_ident_hash(w);
}

/* The parts of an iseq and its constant body that this file uses. */
struct iseq_view {
	uint32_t type, iseq_size, insns_size;
	uint64_t encoded, pathobj, label, base_label, first_lineno, insns, positions, succ;
};

/* Read and check the iseq at @addr and its body. */
static int read_iseq(pid_t pid, const struct rb_offsets *o, uint64_t addr, struct iseq_view *v)
{
	const uint32_t fields[] = {o->body_type,       o->body_iseq_size, o->body_iseq_encoded,
				   o->body_pathobj,    o->body_label,	  o->body_first_lineno,
				   o->body_insns_info, o->body_insns_pos, o->body_insns_size,
				   o->body_insns_succ, o->body_base_label};
	uint8_t hdr[RB_HDR_MAX], body[RB_HDR_MAX];
	uint32_t blen = 0;
	ssize_t n;

	n = lp_remote_read(pid, addr, hdr, o->iseq_body + 8, o->iseq_body + 8);
	if (n < 0)
		return n;
	if (!iseq_flags(lp_get_u64(hdr, 0)))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (fields[i] + 8 > blen)
			blen = fields[i] + 8;
	n = lp_remote_read(pid, lp_get_u64(hdr, o->iseq_body), body, blen, blen);
	if (n < 0)
		return n == -EFAULT ? -EINVAL : (int)n; /* an iseq without a body */
	v->type = lp_get_u32(body, o->body_type);
	v->iseq_size = lp_get_u32(body, o->body_iseq_size);
	v->encoded = lp_get_u64(body, o->body_iseq_encoded);
	v->pathobj = lp_get_u64(body, o->body_pathobj);
	v->label = lp_get_u64(body, o->body_label);
	v->base_label = lp_get_u64(body, o->body_base_label);
	v->first_lineno = lp_get_u64(body, o->body_first_lineno);
	v->insns = lp_get_u64(body, o->body_insns_info);
	v->positions = lp_get_u64(body, o->body_insns_pos);
	v->insns_size = lp_get_u32(body, o->body_insns_size);
	v->succ = lp_get_u64(body, o->body_insns_succ);
	/* first_lineno is a Fixnum: (n << 1) | 1 */
	if (!v->iseq_size || v->iseq_size > RB_ISEQ_MAX || !v->encoded || (v->encoded & 7) ||
	    v->insns_size > v->iseq_size || !(v->first_lineno & 1) ||
	    (int64_t)v->first_lineno < 0 || (v->first_lineno >> 1) > (uint64_t)RB_STR_ABSURD)
		return -EINVAL;
	return 0;
}

/*
 * Rebuild the first @n start positions from the succinct index @t (@len
 * bytes) of an iseq of @size instructions. A rank that moves by more than
 * one, goes back, or disagrees with a block's stored rank is corruption.
 */
static int succ_decode(const uint8_t *t, size_t len, uint32_t size, uint32_t *pos, uint32_t n)
{
	uint32_t imm_words = size < SUCC_IMM_POS ? (size + 8) / 9 : SUCC_IMM_WORDS;
	uint32_t blocks = size < SUCC_IMM_POS ? 0 : (size - SUCC_IMM_POS + 511) / SUCC_BLOCK_BITS;
	uint32_t r = 0;

	if (len < (size_t)imm_words * 8 ||
	    (blocks && len < SUCC_IMM_WORDS * 8 + (size_t)blocks * SUCC_BLOCK_BYTES))
		return -EINVAL;
	for (uint32_t x = 0; x < imm_words * 9 && r < n; x++) {
		uint32_t nr = lp_get_u64(t, x / 9 * 8) >> (x % 9 * 7) & 0x7f;

		if (nr != r && nr != r + 1)
			return -EINVAL;
		if (nr == r + 1)
			pos[r++] = x;
	}
	for (uint32_t k = 0; k < blocks && r < n; k++) {
		const uint8_t *b = t + SUCC_IMM_WORDS * 8 + (size_t)k * SUCC_BLOCK_BYTES;

		if (lp_get_u32(b, 0) != r)
			return -EINVAL;
		for (uint32_t j = 0; j < SUCC_BLOCK_BITS && r < n; j++)
			if (lp_get_u64(b, 16 + j / 64 * 8) >> (j % 64) & 1)
				pos[r++] = SUCC_IMM_POS + k * SUCC_BLOCK_BITS + j;
	}
	return r == n ? 0 : -EINVAL;
}

/* The start positions of @e's entries: the positions array when the build
 * kept it, else the succinct index. */
static int read_positions(pid_t pid, const struct iseq_view *v, struct rb_iseq_entry *e)
{
	uint32_t size = v->iseq_size;
	size_t len;
	uint8_t *t;
	ssize_t got;
	int err;

	if (e->n == 1) {
		e->pos[0] = 0; /* CRuby does not look at the index for one entry */
		return 0;
	}
	if (v->positions) {
		got = lp_remote_read(pid, v->positions, e->pos, e->n * sizeof(uint32_t),
				     e->n * sizeof(uint32_t));
		if (got < 0)
			return got;
		for (uint32_t i = 0; i < e->n; i++)
			if (e->pos[i] >= size || (i && e->pos[i] <= e->pos[i - 1]))
				return -EINVAL;
		return 0;
	}
	len = size < SUCC_IMM_POS ? (size + 8) / 9 * 8
				  : SUCC_IMM_WORDS * 8 + (size_t)(size - SUCC_IMM_POS + 511) /
								 SUCC_BLOCK_BITS * SUCC_BLOCK_BYTES;
	t = malloc(len);
	if (!t)
		return -ENOMEM;
	got = lp_remote_read(pid, v->succ, t, len, len);
	err = got < 0 ? (int)got : succ_decode(t, len, size, e->pos, e->n);
	free(t);
	return err;
}

/* The line of each of @e's entries. */
static int read_lines(pid_t pid, const struct rb_offsets *o, const struct iseq_view *v,
		      struct rb_iseq_entry *e)
{
	size_t len = (size_t)e->n * o->insn_info_size;
	uint8_t *buf = malloc(len ? len : 1);
	ssize_t got;

	if (!buf)
		return -ENOMEM;
	got = lp_remote_read(pid, v->insns, buf, len, len);
	if (got >= 0)
		for (uint32_t i = 0; i < e->n; i++)
			e->lines[i] = (int32_t)lp_get_u32(buf, i * o->insn_info_size +
								       o->insn_info_line_no);
	free(buf);
	return got < 0 ? (int)got : 0;
}

/* Read the iseq @addr of @pid into a new entry. */
static int read_entry(pid_t pid, const struct rb_offsets *o, uint64_t addr,
		      struct rb_iseq_entry **out)
{
	uint16_t ident = read_ident(pid, o, addr);
	struct iseq_view v = {0};
	struct rb_iseq_entry *e;
	uint32_t n;
	int err;

	err = read_iseq(pid, o, addr, &v);
	if (err)
		return err;
	n = v.insns_size < RB_INSNS_MAX ? v.insns_size : RB_INSNS_MAX;
	e = calloc(1, sizeof(*e) + (size_t)n * (sizeof(uint32_t) + sizeof(int32_t)));
	if (!e)
		return -ENOMEM;
	e->iseq = addr;
	e->first_lineno = (int)(v.first_lineno >> 1);
	e->encoded = v.encoded;
	e->iseq_size = v.iseq_size;
	e->n = n;
	e->truncated = n < v.insns_size;
	e->pos = (uint32_t *)e->tail;
	e->lines = (int32_t *)(e->pos + n);
	err = rb_read_string(pid, o, v.label, e->label, sizeof(e->label));
	if (!err)
		err = rb_read_string(pid, o, v.base_label, e->base_label, sizeof(e->base_label));
	if (!err)
		err = rb_read_path(pid, o, v.pathobj, e->path, sizeof(e->path));
	if (!err && n)
		err = read_positions(pid, &v, e);
	if (!err && n)
		err = read_lines(pid, o, &v, e);
	/* Freed (and maybe made another iseq) while it was read: its strings
	 * and lines may be another's. */
	if (!err && rb_iseq_ident_offset(o) && (!ident || read_ident(pid, o, addr) != ident))
		err = -ESTALE;
	if (err) {
		free(e);
		return err;
	}
	e->ident = ident;
	*out = e;
	return 0;
}

/* The line of @pc (see the top of the file). */
static int pc_line(const struct rb_iseq_entry *e, uint64_t pc)
{
	uint64_t pos;
	uint32_t lo = 0, hi = e->n;

	if (!pc || pc < e->encoded || (pc - e->encoded) % 8 || !e->n)
		return e->first_lineno;
	pos = (pc - e->encoded) / 8;
	if (pos > e->iseq_size)
		return e->first_lineno;
	if (pos)
		pos--;
	/* the last entry whose start is <= pos; entry 0 starts at 0 */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (e->pos[mid] <= pos)
			lo = mid;
		else
			hi = mid;
	}
	if (e->pos[lo] > pos || (lo == e->n - 1 && e->truncated))
		return e->first_lineno; /* before the first, or past what was cached */
	return e->lines[lo] > 0 ? e->lines[lo] : e->first_lineno;
}

/* The offsets this file reads, all present and small. */
static bool offsets_usable(const struct rb_offsets *o)
{
	const uint32_t v[] = {o->iseq_body,	    o->body_type,	o->body_iseq_size,
			      o->body_iseq_encoded, o->body_pathobj,	o->body_label,
			      o->body_first_lineno, o->body_insns_info, o->body_insns_pos,
			      o->body_insns_size,   o->body_insns_succ, o->rstring_len,
			      o->rstring_ptr,	    o->rstring_embed,	o->rarray_len,
			      o->rarray_ptr,	    o->rarray_embed,	o->body_base_label};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (v[i] >= RB_OFF_LIMIT)
			return false;
	return o->insn_info_size >= 4 && o->insn_info_size <= 64 &&
	       o->insn_info_line_no + 4 <= o->insn_info_size && o->rstring_noembed &&
	       o->rstring_elen_shift < 64 && o->rarray_elen_shift < 64 && o->rarray_embed_flag &&
	       o->rstring_size <= RB_OFF_LIMIT && o->rstring_size >= o->rstring_ptr + 8 &&
	       o->rstring_size > o->rstring_embed;
}

int rb_iseq_resolve(struct rb_iseq_cache *c, pid_t pid, const struct rb_runtime *rt, uint64_t iseq,
		    uint64_t pc, uint16_t ident, struct rb_frame_name *out)
{
	struct rb_iseq_entry *e;
	int err;

	if (!offsets_usable(&rt->off))
		return -EINVAL;
	e = cache_find(c, pid, iseq);
	if (e && ident && e->ident != ident) {
		/* the sample's iseq is not the one cached at its address */
		cache_remove(c, e);
		free(e);
		e = NULL;
	}
	if (!e) {
		err = read_entry(pid, &rt->off, iseq, &e);
		if (err)
			return err;
		/* read, but not the iseq the sample saw: that one was freed */
		if (ident && e->ident != ident) {
			free(e);
			return -ESTALE;
		}
		e->pid = pid;
		if (cache_insert(c, e)) {
			free(e);
			return -ENOMEM;
		}
	}
	memcpy(out->label, e->label, sizeof(out->label));
	memcpy(out->base_label, e->base_label, sizeof(out->base_label));
	memcpy(out->path, e->path, sizeof(out->path));
	out->line = pc_line(e, pc);
	return 0;
}
