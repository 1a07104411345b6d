// SPDX-License-Identifier: GPL-2.0
/*
 * test_rb_ident.c - rb_iseq_resolve() names a frame only if the iseq at
 * its address is still the one sampled (issue 15).
 *
 * Iseqs are made up in this process, laid out as Ruby 3.1 lays them out,
 * and their identity is hashed the way bpf/ruby.bpf.h does it at a sample
 * (the body pointer, then the body's first words). GC's reuse of a slot is
 * played by giving the same rb_iseq_t another body; its freeing by
 * clearing the flags (T_NONE).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"
#include "bpf/liveprof.h"
#include "user/profile/rb_iseq.h"

/* One made-up iseq's body and the Strings it points to. */
struct fake_body {
	uint64_t body[32];
	uint64_t label[8], path[8], code[4];
	int32_t info[4];
};

/* A String in this process, embedded (the texts here are short). */
static void fake_str(uint64_t *obj, const struct rb_offsets *o, const char *text)
{
	size_t len = strlen(text);

	memset(obj, 0, o->rstring_size);
	obj[0] = RB_T_STRING | (uint64_t)len << o->rstring_elen_shift;
	memcpy((char *)obj + o->rstring_embed, text, len);
}

/* Fill @b as the body of method @label, defined on @line of @path. */
static void fake_body(struct fake_body *b, const struct rb_offsets *o, const char *label,
		      const char *path, int line)
{
	uint32_t one = 1, two = 2;

	memset(b, 0, sizeof(*b));
	memcpy((char *)b->body + o->body_iseq_size, &two, sizeof(two));
	memcpy((char *)b->body + o->body_insns_size, &one, sizeof(one));
	b->info[0] = line;
	b->body[o->body_iseq_encoded / 8] = (uint64_t)(uintptr_t)b->code;
	b->body[o->body_first_lineno / 8] = (uint64_t)line << 1 | 1;
	b->body[o->body_label / 8] = (uint64_t)(uintptr_t)b->label;
	b->body[o->body_base_label / 8] = (uint64_t)(uintptr_t)b->label;
	b->body[o->body_pathobj / 8] = (uint64_t)(uintptr_t)b->path;
	b->body[o->body_insns_info / 8] = (uint64_t)(uintptr_t)b->info;
	fake_str(b->label, o, label);
	fake_str(b->path, o, path);
}

/* The identity BPF would take of @iseq at a sample. */
static uint16_t ident_of(const uint64_t *iseq, const struct rb_offsets *o)
{
	__u64 w[LP_RB_IDENT_WORDS];

	w[0] = iseq[o->iseq_body / 8];
	memcpy(w + 1, (const void *)(uintptr_t)w[0], sizeof(w) - sizeof(w[0]));
	return lp_rb_ident_hash(w);
}

UNIT_TEST(the_identity_window_holds_the_location)
{
	const struct rb_offsets *o = ruby_offsets_builtin(3, 1);
	struct rb_offsets bad;

	CHECK(o != NULL);
	if (!o)
		return;
	CHECK_EQ_INT(rb_iseq_ident_offset(o), 16);
	/* a label past the window: no identity, never a partial one */
	bad = *o;
	bad.body_label = 8 * LP_RB_IDENT_WORDS;
	CHECK_EQ_INT(rb_iseq_ident_offset(&bad), 0);
}

UNIT_TEST(a_reused_slot_is_not_named_after_the_cached_iseq)
{
	const struct rb_offsets *o = ruby_offsets_builtin(3, 1);
	struct rb_runtime rt = {.major = 3, .minor = 1};
	struct rb_iseq_cache *c = rb_iseq_cache__new();
	static uint64_t iseq[8];
	static struct fake_body first, second;
	uint64_t addr = (uint64_t)(uintptr_t)iseq;
	struct rb_frame_name nm;
	uint16_t id1, id2;

	CHECK(c != NULL && o != NULL);
	if (!c || !o)
		return;
	rt.off = *o;
	iseq[0] = RB_T_IMEMO | (uint64_t)RB_IMEMO_ISEQ << RB_IMEMO_SHIFT;
	fake_body(&first, o, "gen_1", "gen1.rb", 2);
	iseq[o->iseq_body / 8] = (uint64_t)(uintptr_t)first.body;
	id1 = ident_of(iseq, o);
	CHECK_EQ_INT(rb_iseq_resolve(c, getpid(), &rt, addr, 0, id1, &nm), 0);
	CHECK_STR(nm.label, "gen_1");
	CHECK_STR(nm.path, "gen1.rb");

	/* GC freed gen_1 and made gen_2 in its slot */
	fake_body(&second, o, "gen_2", "gen2.rb", 3);
	iseq[o->iseq_body / 8] = (uint64_t)(uintptr_t)second.body;
	id2 = ident_of(iseq, o);
	CHECK(id2 != id1);
	/* a sample of gen_2: read again, not taken from the cache */
	CHECK_EQ_INT(rb_iseq_resolve(c, getpid(), &rt, addr, 0, id2, &nm), 0);
	CHECK_STR(nm.label, "gen_2");
	CHECK_STR(nm.path, "gen2.rb");
	CHECK_EQ_INT(nm.line, 3);
	/* a late sample of gen_1: gone, so not named at all */
	CHECK_EQ_INT(rb_iseq_resolve(c, getpid(), &rt, addr, 0, id1, &nm), -ESTALE);
	/* the cache still holds gen_2 */
	CHECK_EQ_INT(rb_iseq_resolve(c, getpid(), &rt, addr, 0, id2, &nm), 0);
	CHECK_STR(nm.label, "gen_2");

	/* freed (T_NONE) before it was read: not named, not cached */
	rb_iseq_cache__forget_pid(c, getpid());
	iseq[0] = 0;
	CHECK(rb_iseq_resolve(c, getpid(), &rt, addr, 0, id2, &nm) < 0);
	iseq[0] = RB_T_IMEMO | (uint64_t)RB_IMEMO_ISEQ << RB_IMEMO_SHIFT;
	CHECK_EQ_INT(rb_iseq_resolve(c, getpid(), &rt, addr, 0, id2, &nm), 0);
	CHECK_STR(nm.label, "gen_2");
	/* no identity from BPF (0): named by its address, as before */
	CHECK_EQ_INT(rb_iseq_resolve(c, getpid(), &rt, addr, 0, 0, &nm), 0);
	CHECK_STR(nm.label, "gen_2");
	rb_iseq_cache__free(c);
}

UNIT_MAIN()
