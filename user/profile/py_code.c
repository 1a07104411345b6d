// SPDX-License-Identifier: GPL-2.0
/*
 * py_code.c - names of CPython code objects in a running process.
 *
 * Everything is read with process_vm_readv(2): a code object's header in
 * one read, each of its two names in one read (header and characters
 * together), its line table in one read (two when it is longer than the
 * first guess). The first code object of a process also costs a look at
 * the type objects (code, str, bytes) by their tp_name, remembered per
 * process: that is what rejects an address that is not a code object, a
 * freed one whose memory was reused, or a string that is not a str.
 *
 * Lines: CPython computes a frame's line (PyUnstable_InterpreterFrame_
 * GetLine in 3.12/3.13, _PyInterpreterFrame_GetLine in 3.11) as
 * PyCode_Addr2Line(code, 2 * (ptr - _PyCode_CODE(code))) where ptr is
 * prev_instr (3.11, 3.12) or instr_ptr (3.13). prev_instr is the first code
 * unit of the instruction being executed, or the last inline-cache unit of
 * a CALL that pushed a frame; instr_ptr is the first code unit of the
 * instruction being executed. Every code unit, caches included, has the
 * location of its instruction in the table, so each version needs the same
 * thing: the line of the code unit @instr points at, no adjustment. Before
 * the first instruction (3.11/3.12 start a frame at _PyCode_CODE - 1) and
 * for a unit without a location, the line is co_firstlineno, as CPython's
 * addrq < 0 case and as "no line" in the contract.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "py_code.h"
#include "py_linetable.h"
#include "bpf/liveprof.h"
#include "../util/util.h"
#include "../util/remote_mem.h"

/* A copy of at most this much of a line table; a longer one names lines up
 * to where the copy ends and co_firstlineno after. */
#define PY_LINETABLE_MAX (64 * 1024)
/* What one read fetches of a line table before knowing its size. */
#define PY_LINETABLE_GUESS 512
/* Larger than any code object or string liveprof will name: corruption. */
#define PY_ABSURD_SIZE (1LL << 28)
/* Member offsets past this are a broken offsets table, not a CPython. */
#define PY_OFF_LIMIT 512
#define PY_HDR_MAX   (PY_OFF_LIMIT + 8)

enum py_type { PY_TYPE_CODE, PY_TYPE_STR, PY_TYPE_BYTES, PY_TYPE_N };

static const char *const py_type_names[PY_TYPE_N] = {"code", "str", "bytes"};

/* A node of a chained hash table: embedded first in what it indexes. */
struct hnode {
	struct hnode *next;
	uint64_t key;
};

struct htab {
	struct hnode **b;
	size_t nb; /* power of two, or 0 before the first insert */
	size_t n;
};

struct py_code_entry {
	struct hnode node; /* key: the code object's address */
	char qualname[PY_NAME_MAX];
	char filename[PY_FILE_MAX];
	int firstlineno;
	uint16_t ident;	     /* hash of its identity window, as BPF takes it */
	uint64_t code_units; /* Py_SIZE(code): instructions and caches */
	uint32_t lt_len;
	uint8_t lt[]; /* co_linetable, at most PY_LINETABLE_MAX bytes */
};

struct py_pid {
	struct hnode node;	       /* key: the pid */
	uint64_t type_addr[PY_TYPE_N]; /* verified type objects, 0 = not yet */
	struct htab codes;	       /* of struct py_code_entry */
};

struct py_code_cache {
	struct htab pids; /* of struct py_pid */
};

static struct hnode *htab_find(const struct htab *t, uint64_t key)
{
	if (!t->nb)
		return NULL;
	for (struct hnode *h = t->b[lp_mix64(key) & (t->nb - 1)]; h; h = h->next)
		if (h->key == key)
			return h;
	return NULL;
}

/* Insert @h (its key not present); the table doubles at load 1. */
static int htab_insert(struct htab *t, struct hnode *h)
{
	if (t->n >= t->nb) {
		size_t nb = t->nb ? t->nb * 2 : 16;
		struct hnode **b = calloc(nb, sizeof(*b));

		if (!b)
			return -ENOMEM;
		for (size_t i = 0; i < t->nb; i++) {
			for (struct hnode *x = t->b[i], *next; x; x = next) {
				size_t j = lp_mix64(x->key) & (nb - 1);

				next = x->next;
				x->next = b[j];
				b[j] = x;
			}
		}
		free(t->b);
		t->b = b;
		t->nb = nb;
	}
	size_t i = lp_mix64(h->key) & (t->nb - 1);

	h->next = t->b[i];
	t->b[i] = h;
	t->n++;
	return 0;
}

/* Free every node (each is a malloc'd block starting with its hnode). */
static void htab_free(struct htab *t, void (*free_node)(struct hnode *))
{
	for (size_t i = 0; i < t->nb; i++) {
		for (struct hnode *x = t->b[i], *next; x; x = next) {
			next = x->next;
			free_node(x);
		}
	}
	free(t->b);
	*t = (struct htab){0};
}

static void free_code_node(struct hnode *h)
{
	free(h);
}

static void free_pid_node(struct hnode *h)
{
	struct py_pid *p = (struct py_pid *)h;

	htab_free(&p->codes, free_code_node);
	free(p);
}

/* Take the node of @key out of @t; NULL if there is none. */
static struct hnode *htab_unlink(struct htab *t, uint64_t key)
{
	if (!t->nb)
		return NULL;
	for (struct hnode **pp = &t->b[lp_mix64(key) & (t->nb - 1)]; *pp; pp = &(*pp)->next) {
		if ((*pp)->key == key) {
			struct hnode *h = *pp;

			*pp = h->next;
			t->n--;
			return h;
		}
	}
	return NULL;
}

struct py_code_cache *py_code_cache__new(void)
{
	return calloc(1, sizeof(struct py_code_cache));
}

void py_code_cache__free(struct py_code_cache *c)
{
	if (!c)
		return;
	htab_free(&c->pids, free_pid_node);
	free(c);
}

void py_code_cache__forget_pid(struct py_code_cache *c, pid_t pid)
{
	struct hnode *h = htab_unlink(&c->pids, (uint64_t)pid);

	if (h)
		free_pid_node(h);
}

/*
 * Is the object whose ob_type is @type_addr of type @want? The answer for
 * a type object is remembered per process: type objects are static.
 * PyTypeObject starts with a PyVarObject, tp_name follows it.
 */
static int check_type(pid_t pid, const struct py_offsets *off, struct py_pid *p, enum py_type want,
		      uint64_t type_addr)
{
	const char *name = py_type_names[want];
	size_t len = strlen(name) + 1;
	char got[8];
	uint64_t tp_name;
	ssize_t n;

	if (p->type_addr[want])
		return type_addr == p->type_addr[want] ? 0 : -EINVAL;
	n = lp_remote_read(pid, type_addr + off->bytes_size + 8, &tp_name, sizeof(tp_name),
			   sizeof(tp_name));
	if (n < 0)
		return n == -EFAULT ? -EINVAL : (int)n;
	n = lp_remote_read(pid, tp_name, got, len, len);
	if (n < 0)
		return n == -EFAULT ? -EINVAL : (int)n;
	if (memcmp(got, name, len) != 0)
		return -EINVAL;
	p->type_addr[want] = type_addr;
	return 0;
}

/* Append @cp to @out as UTF-8, or return false when it does not fit. */
static bool put_utf8(char *out, size_t cap, size_t *pos, uint32_t cp)
{
	uint8_t b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = 0xc0 | cp >> 6;
		b[1] = 0x80 | (cp & 0x3f);
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = 0xe0 | cp >> 12;
		b[1] = 0x80 | (cp >> 6 & 0x3f);
		b[2] = 0x80 | (cp & 0x3f);
		n = 3;
	} else {
		b[0] = 0xf0 | cp >> 18;
		b[1] = 0x80 | (cp >> 12 & 0x3f);
		b[2] = 0x80 | (cp >> 6 & 0x3f);
		b[3] = 0x80 | (cp & 0x3f);
		n = 4;
	}
	if (*pos + n >= cap)
		return false;
	memcpy(out + *pos, b, n);
	*pos += n;
	return true;
}

/*
 * Decode @ncp characters of @kind bytes each at @data into UTF-8 in @out,
 * stopping cleanly (on a character boundary) when @out is full. A NUL or a
 * lone surrogate (surrogateescape'd file names have them) becomes U+FFFD so
 * that the result is one valid UTF-8 C string.
 */
static int decode_chars(const uint8_t *data, int64_t ncp, unsigned int kind, bool ascii, char *out,
			size_t cap)
{
	size_t pos = 0;

	for (int64_t i = 0; i < ncp; i++) {
		uint32_t cp;

		if (kind == 1) {
			cp = data[i];
		} else if (kind == 2) {
			uint16_t u;

			memcpy(&u, data + 2 * i, 2);
			cp = u;
		} else {
			memcpy(&cp, data + 4 * i, 4);
		}
		if ((ascii && cp >= 0x80) || cp > 0x10ffff)
			return -EINVAL;
		if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff))
			cp = 0xfffd;
		if (!put_utf8(out, cap, &pos, cp))
			break;
	}
	out[pos] = '\0';
	return 0;
}

/*
 * Read the str at @addr into @out (@cap bytes with the NUL) as UTF-8, in
 * one read of the header and the characters. Only compact strings, the
 * kind every str the compiler makes is, are accepted.
 */
static int read_str(pid_t pid, const struct py_runtime *rt, struct py_pid *p, uint64_t addr,
		    char *out, size_t cap)
{
	const struct py_offsets *off = &rt->off;
	uint8_t buf[PY_OFF_LIMIT + 4 * PY_FILE_MAX];
	size_t want = off->compact_size + 4 * (cap - 1);
	unsigned int kind, state;
	int64_t length, ncp;
	uint32_t data_off;
	bool ascii;
	ssize_t n;
	int err;

	n = lp_remote_read(pid, addr, buf, want, off->ascii_size);
	if (n < 0)
		return n;
	err = check_type(pid, off, p, PY_TYPE_STR, lp_get_u64(buf, off->bytes_size - 8));
	if (err)
		return err;
	length = (int64_t)lp_get_u64(buf, off->unicode_length);
	state = lp_get_u32(buf, off->unicode_state);
	kind = state >> 2 & 7;
	ascii = state >> 6 & 1;
	if (length < 0 || length > PY_ABSURD_SIZE || !(state >> 5 & 1))
		return -EINVAL;
	if ((kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1))
		return -EINVAL;
	/* 3.11 still has not-ready legacy strings; a compact one is ready. */
	if (rt->minor == 11 && !(state >> 7 & 1))
		return -EINVAL;
	data_off = ascii ? off->ascii_size : off->compact_size;
	ncp = length < (int64_t)cap - 1 ? length : (int64_t)cap - 1;
	if ((size_t)n < data_off + (size_t)ncp * kind)
		return -EFAULT;
	return decode_chars(buf + data_off, ncp, kind, ascii, out, cap);
}

/*
 * Read the bytes object @addr (co_linetable) into a new entry with room
 * for its first PY_LINETABLE_MAX bytes.
 */
static int read_linetable(pid_t pid, const struct py_offsets *off, struct py_pid *p, uint64_t addr,
			  struct py_code_entry **out)
{
	uint8_t buf[PY_OFF_LIMIT + PY_LINETABLE_GUESS];
	struct py_code_entry *e;
	size_t got, len;
	int64_t size;
	ssize_t n;
	int err;

	n = lp_remote_read(pid, addr, buf, off->bytes_sval + PY_LINETABLE_GUESS, off->bytes_sval);
	if (n < 0)
		return n;
	err = check_type(pid, off, p, PY_TYPE_BYTES, lp_get_u64(buf, off->bytes_size - 8));
	if (err)
		return err;
	size = (int64_t)lp_get_u64(buf, off->bytes_size);
	if (size < 0 || size > PY_ABSURD_SIZE)
		return -EINVAL;
	len = size < PY_LINETABLE_MAX ? size : PY_LINETABLE_MAX;
	e = calloc(1, sizeof(*e) + len);
	if (!e)
		return -ENOMEM;
	got = (size_t)n - off->bytes_sval < len ? (size_t)n - off->bytes_sval : len;
	memcpy(e->lt, buf + off->bytes_sval, got);
	if (got < len) {
		n = lp_remote_read(pid, addr + off->bytes_sval + got, e->lt + got, len - got,
				   len - got);
		if (n < 0) {
			free(e);
			return n;
		}
	}
	e->lt_len = len;
	*out = e;
	return 0;
}

/* The offsets this file reads, all present and small. */
static bool offsets_usable(const struct py_offsets *o)
{
	const uint32_t v[] = {o->code_filename,	 o->code_qualname,     o->code_firstlineno,
			      o->code_linetable, o->unicode_length,    o->unicode_state,
			      o->ascii_size,	 o->compact_size,      o->bytes_size,
			      o->bytes_sval,	 o->code_code_adaptive};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (v[i] >= PY_OFF_LIMIT)
			return false;
	return o->bytes_size >= 8;
}

static uint32_t max_u32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

uint32_t py_code_ident_offset(const struct py_offsets *o)
{
	uint32_t lo = o->code_firstlineno, hi = o->code_firstlineno + 4;
	const uint32_t ptrs[] = {o->code_filename, o->code_qualname, o->code_linetable};

	for (size_t i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++) {
		lo = ptrs[i] < lo ? ptrs[i] : lo;
		hi = ptrs[i] + 8 > hi ? ptrs[i] + 8 : hi;
	}
	lo &= ~7u;
	/* 0 is the object's refcount, never a window; too wide: no identity */
	if (!lo || hi - lo > 8 * LP_PY_IDENT_WORDS || lo + 8 * LP_PY_IDENT_WORDS > PY_OFF_LIMIT)
		return 0;
	return lo;
}

/* Refcounts live objects have; a freed block's first word is the link to
 * the next free one (a heap address) or 0. 3.12's immortal count fits. */
#define PY_REFCNT_MAX (1ull << 40)

/*
 * The hash of @code's identity window as it is now, or 0 if unread or the
 * object is freed: a freed block keeps its header, but its strings may
 * already be another object's.
 */
static uint16_t read_ident(pid_t pid, const struct py_offsets *off, uint64_t code)
{
	uint32_t at = py_code_ident_offset(off);
	__u64 w[PY_OFF_LIMIT / 8];
	size_t len = at + 8 * LP_PY_IDENT_WORDS;

	if (!at || lp_remote_read(pid, code, w, len, len) < 0)
		return 0;
	if (!w[0] || w[0] >= PY_REFCNT_MAX)
		return 0;
	return lp_py_ident_hash(w + at / 8);
}

/* Read the code object @code of @pid into a new entry. */
static int read_code(pid_t pid, const struct py_runtime *rt, struct py_pid *p, uint64_t code,
		     struct py_code_entry **out)
{
	const struct py_offsets *off = &rt->off;
	uint32_t hdr = max_u32(max_u32(off->code_filename, off->code_qualname),
			       max_u32(off->code_linetable, off->bytes_size)) +
		       8;
	uint8_t buf[PY_HDR_MAX];
	struct py_code_entry *e = NULL;
	int64_t units;
	int32_t first;
	ssize_t n;
	int err;

	uint16_t ident = read_ident(pid, off, code);

	hdr = max_u32(hdr, off->code_firstlineno + 4);
	n = lp_remote_read(pid, code, buf, hdr, hdr);
	if (n < 0)
		return n;
	/* PyVarObject: ob_type just before ob_size, as in a bytes object */
	err = check_type(pid, off, p, PY_TYPE_CODE, lp_get_u64(buf, off->bytes_size - 8));
	if (err)
		return err;
	units = (int64_t)lp_get_u64(buf, off->bytes_size);
	first = (int32_t)lp_get_u32(buf, off->code_firstlineno);
	if (units <= 0 || units > PY_ABSURD_SIZE || first < 0 || first > PY_ABSURD_SIZE)
		return -EINVAL;
	err = read_linetable(pid, off, p, lp_get_u64(buf, off->code_linetable), &e);
	if (err)
		return err;
	e->node.key = code;
	e->firstlineno = first;
	e->code_units = units;
	err = read_str(pid, rt, p, lp_get_u64(buf, off->code_qualname), e->qualname, PY_NAME_MAX);
	if (!err)
		err = read_str(pid, rt, p, lp_get_u64(buf, off->code_filename), e->filename,
			       PY_FILE_MAX);
	/* Freed (and maybe replaced) while we read it: its strings may be
	 * another's. Freed before: not the object any sample saw. */
	if (!err && py_code_ident_offset(off) && (!ident || read_ident(pid, off, code) != ident))
		err = -ESTALE;
	if (err) {
		free(e);
		return err;
	}
	e->ident = ident;
	*out = e;
	return 0;
}

/* The line of the code unit at @instr (see the top of the file). */
static int instr_line(const struct py_code_entry *e, const struct py_runtime *rt, uint64_t instr)
{
	uint64_t base = e->node.key + rt->off.code_code_adaptive;
	int line;

	if (!instr || instr < base || (instr - base) / 2 >= e->code_units)
		return e->firstlineno;
	line = py_linetable_line(e->lt, e->lt_len, e->firstlineno, (instr - base) / 2);
	return line < 0 ? e->firstlineno : line;
}

static struct py_pid *pid_get(struct py_code_cache *c, pid_t pid)
{
	struct py_pid *p = (struct py_pid *)htab_find(&c->pids, (uint64_t)pid);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->node.key = (uint64_t)pid;
	if (htab_insert(&c->pids, &p->node)) {
		free(p);
		return NULL;
	}
	return p;
}

int py_code_resolve(struct py_code_cache *c, pid_t pid, const struct py_runtime *rt, uint64_t code,
		    uint64_t instr, uint16_t ident, struct py_frame_name *out)
{
	struct py_code_entry *e;
	struct py_pid *p;
	int err;

	if (!offsets_usable(&rt->off))
		return -EINVAL;
	p = pid_get(c, pid);
	if (!p)
		return -ENOMEM;
	e = (struct py_code_entry *)htab_find(&p->codes, code);
	if (e && ident && e->ident != ident) {
		/* the sample's object is not the one cached at its address */
		free(htab_unlink(&p->codes, code));
		e = NULL;
	}
	if (!e) {
		err = read_code(pid, rt, p, code, &e);
		/* read, but not the object the sample saw: that one was freed */
		if (!err && ident && e->ident != ident) {
			free(e);
			err = -ESTALE;
		}
		if (!err && htab_insert(&p->codes, &e->node)) {
			free(e);
			err = -ENOMEM;
		}
		if (err) {
			/* no record of a process that is gone */
			if (err == -ESRCH && !p->codes.n)
				py_code_cache__forget_pid(c, pid);
			return err;
		}
	}
	memcpy(out->qualname, e->qualname, sizeof(out->qualname));
	memcpy(out->filename, e->filename, sizeof(out->filename));
	out->line = instr_line(e, rt, instr);
	return 0;
}
