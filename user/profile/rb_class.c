// SPDX-License-Identifier: GPL-2.0
/*
 * rb_class.c - the class that qualifies a CRuby frame's method (see
 * rb_class.h for what is read and why).
 *
 * Every object read is checked to be of the type expected (RBasic.flags)
 * before a pointer in it is followed; a table of instance variables is
 * read only up to RB_IV_MAX entries. Results are cached per (pid, method
 * entry) in a direct-mapped table: a colliding entry is read again, never
 * mistaken, since the key is compared whole. Failed reads are not cached
 * (the next sample may read); -ENOENT is (it says what the frame is).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rb_class.h"
#include "../util/util.h"
#include "../util/remote_mem.h"

/* Instance variables of a class looked at. The path is set when the class
 * is named (`class Foo`), usually before any other. */
#define RB_IV_MAX   256
#define CACHE_SLOTS 4096 /* method entries, direct-mapped */
#define PID_SLOTS   64	 /* processes whose IDs were learned */
/* What is read of a method entry, an svar or a class: one heap slot
 * (sizeof(RVALUE) in 3.1), never past it into what may be unmapped */
#define RB_OBJ_HDR   40
#define RB_OFF_LIMIT 256 /* past this, an offsets table is broken */

struct owner_slot {
	pid_t pid; /* 0: empty */
	uint64_t me;
	int err; /* 0 or -ENOENT */
	bool singleton;
	char path[RB_CLASS_MAX];
};

/* What one process's interpreter uses as IDs for the two names. */
struct pid_ids {
	pid_t pid; /* 0: empty */
	uint64_t classpath, attached;
};

struct rb_class_cache {
	struct owner_slot *slots; /* CACHE_SLOTS, allocated on first use */
	struct pid_ids ids[PID_SLOTS];
};

struct rb_class_cache *rb_class_cache__new(void)
{
	return calloc(1, sizeof(struct rb_class_cache));
}

void rb_class_cache__free(struct rb_class_cache *c)
{
	if (!c)
		return;
	free(c->slots);
	free(c);
}

void rb_class_cache__forget_pid(struct rb_class_cache *c, pid_t pid)
{
	for (size_t i = 0; c->slots && i < CACHE_SLOTS; i++)
		if (c->slots[i].pid == pid)
			c->slots[i].pid = 0;
	for (size_t i = 0; i < PID_SLOTS; i++)
		if (c->ids[i].pid == pid)
			c->ids[i].pid = 0;
}

static bool heap_value(uint64_t v)
{
	return v && !(v & 7);
}

/* The first @len bytes of the object @v (flags first); -EINVAL if it is
 * not a heap object. */
static int read_obj(pid_t pid, uint64_t v, uint8_t *buf, size_t len)
{
	ssize_t n;

	if (!heap_value(v))
		return -EINVAL;
	n = lp_remote_read(pid, v, buf, len, len);
	return n < 0 ? (int)n : 0;
}

static unsigned int type_of(uint64_t flags)
{
	return flags & RB_T_MASK;
}

static unsigned int imemo_of(uint64_t flags)
{
	return type_of(flags) == RB_T_IMEMO ? (flags >> RB_IMEMO_SHIFT & RB_IMEMO_MASK) : ~0u;
}

/* A class's instance variables: key and value of each, as read. */
struct ivars {
	uint64_t key[RB_IV_MAX], val[RB_IV_MAX];
	size_t n;
};

/*
 * Read the instance variables of @klass (a T_CLASS, T_MODULE or T_ICLASS:
 * their RClass has the ext pointer) into @iv. A class without any has
 * none (0 entries).
 */
static int read_ivars(pid_t pid, const struct rb_offsets *o, uint64_t klass, struct ivars *iv)
{
	uint8_t obj[RB_OBJ_HDR], tbl[RB_OFF_LIMIT], *buf;
	uint64_t ext, t = 0, start, bound, ents;
	size_t esz = o->st_entry_size;
	int err;

	iv->n = 0;
	err = read_obj(pid, klass, obj, o->rclass_ext + 8);
	if (err)
		return err;
	ext = lp_get_u64(obj, o->rclass_ext);
	if (!ext || lp_remote_read(pid, ext + o->ext_iv_tbl, &t, 8, 8) < 0)
		return -EFAULT;
	if (!t)
		return 0;
	if (lp_remote_read(pid, t, tbl, o->st_entries + 8, o->st_entries + 8) < 0)
		return -EFAULT;
	start = lp_get_u64(tbl, o->st_entries_start);
	bound = lp_get_u64(tbl, o->st_entries_bound);
	ents = lp_get_u64(tbl, o->st_entries);
	if (bound < start || bound - start > (1u << 24) || (bound > start && !ents))
		return -EINVAL;
	iv->n = bound - start < RB_IV_MAX ? bound - start : RB_IV_MAX;
	if (!iv->n)
		return 0;
	buf = malloc(iv->n * esz);
	if (!buf)
		return -ENOMEM;
	err = 0;
	if (lp_remote_read(pid, ents + start * esz, buf, iv->n * esz, iv->n * esz) < 0)
		err = -EFAULT;
	for (size_t i = 0; i < iv->n && !err; i++) {
		iv->key[i] = lp_get_u64(buf, i * esz + o->st_entry_key);
		iv->val[i] = lp_get_u64(buf, i * esz + o->st_entry_record);
	}
	free(buf);
	return err;
}

/* The value of instance variable @id of @klass; -ENOENT if it has none. */
static int class_ivar(pid_t pid, const struct rb_offsets *o, uint64_t klass, uint64_t id,
		      uint64_t *out)
{
	struct ivars *iv = malloc(sizeof(*iv));
	int err;

	if (!iv)
		return -ENOMEM;
	err = read_ivars(pid, o, klass, iv);
	if (!err)
		err = -ENOENT;
	for (size_t i = 0; i < iv->n && err == -ENOENT; i++)
		if (iv->key[i] == id) {
			*out = iv->val[i];
			err = 0;
		}
	free(iv);
	return err;
}

/*
 * Learn @p's IDs from Object: its singleton class's ivar whose value is
 * Object is __attached__; its own whose value is the String "Object" is
 * __classpath__ (Object has no other String ivar, but any is checked).
 */
static int learn_ids(pid_t pid, const struct rb_offsets *o, uint64_t cobject, struct pid_ids *p)
{
	uint8_t obj[RB_OBJ_HDR];
	uint64_t object = 0;
	struct ivars *iv = malloc(sizeof(*iv));
	char name[16];
	int err;

	if (!iv)
		return -ENOMEM;
	p->classpath = p->attached = 0;
	err = cobject ? (int)lp_remote_read(pid, cobject, &object, 8, 8) : -EINVAL;
	if (err >= 0)
		err = read_obj(pid, object, obj, o->rbasic_klass + 8);
	if (!err && type_of(lp_get_u64(obj, 0)) != RB_T_CLASS)
		err = -EINVAL;
	if (!err)
		err = read_ivars(pid, o, lp_get_u64(obj, o->rbasic_klass), iv);
	for (size_t i = 0; !err && i < iv->n && !p->attached; i++)
		if (iv->val[i] == object)
			p->attached = iv->key[i];
	if (!err)
		err = read_ivars(pid, o, object, iv);
	for (size_t i = 0; !err && i < iv->n && !p->classpath; i++)
		if (!rb_read_string(pid, o, iv->val[i], name, sizeof(name)) &&
		    !strcmp(name, "Object"))
			p->classpath = iv->key[i];
	free(iv);
	if (!err && (!p->attached || !p->classpath))
		err = -EINVAL;
	return err;
}

/* The slot of @pid's IDs, learned if they were not yet; NULL on failure. */
static const struct pid_ids *ids_of(struct rb_class_cache *c, pid_t pid, const struct rb_offsets *o,
				    uint64_t cobject, int *err)
{
	struct pid_ids *p = &c->ids[lp_mix64((uint64_t)pid) % PID_SLOTS];

	if (p->pid == pid)
		return p;
	p->pid = 0;
	*err = learn_ids(pid, o, cobject, p);
	if (*err)
		return NULL;
	p->pid = pid;
	return p;
}

/*
 * The method entry @aux is or holds (an svar: a method that set $~ or $_
 * keeps it in one), read into @me, its address in *@addr; -ENOENT when
 * @aux names no method (a cref: the top level, a class body), *@addr then
 * the cref's address (0 if none).
 */
static int method_entry(pid_t pid, const struct rb_offsets *o, uint64_t aux, uint8_t *me,
			uint64_t *addr)
{
	int err;

	*addr = 0;
	err = read_obj(pid, aux, me, RB_OBJ_HDR);
	if (err)
		return err;
	if (imemo_of(lp_get_u64(me, 0)) == RB_IMEMO_SVAR) {
		aux = lp_get_u64(me, o->svar_cref_or_me);
		if (!aux)
			return -ENOENT;
		err = read_obj(pid, aux, me, RB_OBJ_HDR);
		if (err)
			return err;
	}
	*addr = aux;
	switch (imemo_of(lp_get_u64(me, 0))) {
	case RB_IMEMO_MENT:
		return 0;
	case RB_IMEMO_CREF:
		return -ENOENT;
	default:
		return -EINVAL;
	}
}

/* Read what rb_method_owner() returns of the method entry @me (read). */
static int read_owner(pid_t pid, const struct rb_offsets *o, const struct pid_ids *ids,
		      const uint8_t *me, char *out, size_t cap, bool *singleton)
{
	uint8_t klass_hdr[RB_OBJ_HDR];
	uint64_t def_word = 0, klass, flags, path;
	int err;

	/* only an iseq method is qualified (full_label: a bmethod's frame
	 * is named by its block's iseq) */
	if (lp_remote_read(pid, lp_get_u64(me, o->me_def), &def_word, 8, 8) < 0)
		return -EFAULT;
	if (def_word & o->def_type_mask)
		return -ENOENT;
	klass = lp_get_u64(me, o->me_defined_class);
	err = read_obj(pid, klass, klass_hdr, o->rbasic_klass + 8);
	if (err)
		return err;
	flags = lp_get_u64(klass_hdr, 0);
	if (type_of(flags) == RB_T_ICLASS) {
		klass = lp_get_u64(klass_hdr, o->rbasic_klass);
		err = read_obj(pid, klass, klass_hdr, o->rbasic_klass + 8);
		if (err)
			return err;
		flags = lp_get_u64(klass_hdr, 0);
	}
	if (type_of(flags) != RB_T_CLASS && type_of(flags) != RB_T_MODULE)
		return -EINVAL;
	*singleton = type_of(flags) == RB_T_CLASS && (flags & RB_FL_SINGLETON);
	if (*singleton) {
		err = class_ivar(pid, o, klass, ids->attached, &klass);
		if (err)
			return err == -ENOENT ? -EINVAL : err;
		/* a plain object's singleton: Ruby shows "#<Foo:0x...>" */
		if (read_obj(pid, klass, klass_hdr, 8) ||
		    (type_of(lp_get_u64(klass_hdr, 0)) != RB_T_CLASS &&
		     type_of(lp_get_u64(klass_hdr, 0)) != RB_T_MODULE))
			return -ENOENT;
	}
	/* an anonymous class has no path (Ruby shows "#<Class:0x...>") */
	err = class_ivar(pid, o, klass, ids->classpath, &path);
	if (err)
		return err;
	return rb_read_string(pid, o, path, out, cap);
}

/* The offsets this file reads, all inside what it reads of each object. */
static bool offsets_usable(const struct rb_offsets *o)
{
	const uint32_t hdr[] = {o->svar_cref_or_me, o->me_defined_class, o->me_def, o->rbasic_klass,
				o->rclass_ext};

	for (size_t i = 0; i < sizeof(hdr) / sizeof(hdr[0]); i++)
		if (hdr[i] + 8 > RB_OBJ_HDR)
			return false;
	return o->def_type_mask && o->ext_iv_tbl < RB_OFF_LIMIT &&
	       o->st_entries_start + 8 <= RB_OFF_LIMIT && o->st_entries_bound + 8 <= RB_OFF_LIMIT &&
	       o->st_entries + 8 <= RB_OFF_LIMIT && o->st_entry_size >= 16 &&
	       o->st_entry_size <= 64 && o->st_entry_key + 8 <= o->st_entry_size &&
	       o->st_entry_record + 8 <= o->st_entry_size;
}

static struct owner_slot *slot_of(struct rb_class_cache *c, pid_t pid, uint64_t key)
{
	return &c->slots[lp_mix64(key ^ lp_mix64((uint64_t)pid)) % CACHE_SLOTS];
}

/* What @s holds, into the caller's out-parameters. */
static int cached(const struct owner_slot *s, char *out, size_t cap, bool *singleton)
{
	if (s->err)
		return s->err;
	*singleton = s->singleton;
	snprintf(out, cap, "%s", s->path);
	return 0;
}

int rb_method_owner(struct rb_class_cache *c, pid_t pid, const struct rb_runtime *rt,
		    uint64_t cobject, uint64_t aux, char *out, size_t cap, bool *singleton)
{
	const struct rb_offsets *o = &rt->off;
	const struct pid_ids *ids;
	uint8_t me[RB_OBJ_HDR];
	struct owner_slot *s;
	uint64_t addr = 0;
	int err;

	if (!aux)
		return -ENOENT;
	if (!offsets_usable(o) || cap > RB_PATH_MAX)
		return -EINVAL;
	if (!c->slots && !(c->slots = calloc(CACHE_SLOTS, sizeof(*c->slots))))
		return -ENOMEM;
	s = slot_of(c, pid, aux);
	if (s->pid == pid && s->me == aux)
		return cached(s, out, cap, singleton);
	/* An svar is made anew by every call that sets $~: never a key (its
	 * address is reused for others); the method entry in it is. */
	err = method_entry(pid, o, aux, me, &addr);
	if (err && err != -ENOENT)
		return err;
	if (!addr)
		return -ENOENT;
	s = slot_of(c, pid, addr);
	if (s->pid == pid && s->me == addr)
		return cached(s, out, cap, singleton);
	if (!err) {
		ids = ids_of(c, pid, o, cobject, &err);
		if (!ids)
			return err;
		err = read_owner(pid, o, ids, me, s->path, sizeof(s->path), &s->singleton);
		if (err && err != -ENOENT) {
			s->pid = 0;
			return err;
		}
	}
	/* a cref (the top level's, a class body's) is remembered by its own
	 * address: it lives as long as its scope, unlike an svar */
	s->pid = pid;
	s->me = addr;
	s->err = err;
	return cached(s, out, cap, singleton);
}

bool rb_qualify_label(const struct rb_frame_name *nm, const char *owner, bool singleton, char *out,
		      size_t cap)
{
	size_t ll = strlen(nm->label), bl = strlen(nm->base_label);

	if (!bl || bl > ll || strcmp(nm->label + ll - bl, nm->base_label))
		return false;
	snprintf(out, cap, "%.*s%s%c%s", (int)(ll - bl), nm->label, owner, singleton ? '.' : '#',
		 nm->base_label);
	return true;
}
