// SPDX-License-Identifier: GPL-2.0
/*
 * stack_store.c - stacks interned by content. A stack is known by a
 * 128-bit hash of everything that makes it itself (its process, flags and
 * addresses, its thread with per_thread), keyed by a seed drawn for each
 * store, as the OpenTelemetry eBPF profiler knows its traces: two stacks
 * are one when both halves agree. Interning a stack already seen costs
 * that hash and a probe, and never reads its addresses.
 *
 * The addresses are kept only for as long as someone will read them: a
 * record holds the stack's identity, then its addresses packed as 4-byte
 * differences from the address before (a return address is mostly within
 * a few megabytes of its caller's). A growing array maps ids to records.
 *
 * Why packed: a profile of distinct stacks grows the daemon by every new
 * stack's bytes, and in these VMs memory touched for the first time is
 * the largest cost of a new stack (the host backs each page at its first
 * touch, about 2 us per 4 KB). A stack of 43 frames took 392 bytes here,
 * now about 220 (one escape, into libc).
 * Released ids are reused, so the arrays stay as large as the most stacks
 * alive at once, not as all the stacks a long run has seen. A stack whose
 * frames are symbolized sheds its addresses (stack_store__shed): its id,
 * flags and hash stay, and it is found as before; its bytes go to the
 * next new stack, so a program of ever new paths no longer takes a fresh
 * page every few stacks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "user/profile/stack_store.h"
#include "user/util/slab.h"
#include "user/util/util.h"

#define PINNED	   (1u << 31) /* in seen[]: never released */
#define SHED	   (1u << 30) /* in seen[]: addresses dropped (stack_store__shed) */
#define SHED_KINDS 32	      /* flags a shed stack may have: STACK_F_* < 32 */
#define PACKED_MAX (12 * STACK_STORE_MAX_ADDRS) /* an escaped address takes 12 bytes */

/* A stored stack: a raw_stack without the pointers, then its packed addresses. */
struct record {
	uint32_t pid, tid, flags;
	uint16_t n_user, n_kernel;
	uint16_t packed_len; /* bytes of packed[] */
	char comm[16];
	uint8_t packed[]; /* user addresses leaf first, then kernel ones */
};

struct stack_store {
	bool per_thread;
	struct record **stacks; /* by id; NULL: released, the id is free */
	/* the record every shed stack with these flags points to: no
	 * addresses, no process; made on the first shed of its kind */
	struct record *shed_kinds[SHED_KINDS];
	uint64_t shed;
	uint64_t *hashes;	  /* by id: the key's first half, h */
	uint64_t *hashes2;	  /* by id: its second half, h2 */
	struct stack_keyer keyer; /* the key function, seeded for this store */
	uint32_t *seen;		  /* by id: the epoch last interned, | PINNED, | SHED */
	size_t n, cap;		  /* ids handed out so far (the bound), room */
	size_t live;		  /* stacks not released */
	uint32_t *free_ids;	  /* released ids, reused first */
	size_t n_free, cap_free;
	uint32_t epoch;
	uint64_t released;
	/* open addressing: h's high half << 32 | id + 1, 0 = empty; a
	 * probe compares the high halves in the slot itself before it reads
	 * the per-id hashes (each of those is a cache miss) */
	uint64_t *table;
	size_t table_cap;
	struct lp_slab *slab; /* the records */
};

struct stack_key stack_store__hash(const struct stack_store *ss, const struct raw_stack *st)
{
	uint64_t head[3] = {
		st->pid, ((uint64_t)st->flags << 32) | ((uint64_t)st->n_user << 16) | st->n_kernel,
		st->tid};

	return stack_keyer__key(&ss->keyer, head, ss->per_thread ? 3 : 2, st->user, st->n_user,
				st->kernel, st->n_kernel);
}

/*
 * @n addresses of @v as 4-byte differences from the address before (from
 * @prev at first); a difference that does not fit, as between two
 * modules far apart, is ESCAPE and then the whole address. Fixed-width so
 * that packing is a well-predicted branch per frame: it is paid by every
 * sample, and a stack seen before (most samples) costs its packing and a
 * compare, where varints' length branches cost 3 ns a frame.
 */
#define ESCAPE INT32_MIN

static uint8_t *pack_addrs(uint8_t *out, const uint64_t *v, unsigned int n, uint64_t *prev)
{
	for (unsigned int i = 0; i < n; i++) {
		int64_t d = (int64_t)(v[i] - *prev);
		int32_t d32 = (int32_t)d;

		*prev = v[i];
		if (d32 == d && d32 != ESCAPE) {
			memcpy(out, &d32, sizeof(d32));
			out += sizeof(d32);
			continue;
		}
		d32 = ESCAPE;
		memcpy(out, &d32, sizeof(d32));
		memcpy(out + sizeof(d32), &v[i], sizeof(v[i]));
		out += sizeof(d32) + sizeof(v[i]);
	}
	return out;
}

static const uint8_t *unpack_addrs(const uint8_t *in, uint64_t *v, unsigned int n, uint64_t *prev)
{
	for (unsigned int i = 0; i < n; i++) {
		int32_t d32;

		memcpy(&d32, in, sizeof(d32));
		in += sizeof(d32);
		if (d32 == ESCAPE) {
			memcpy(prev, in, sizeof(*prev));
			in += sizeof(*prev);
		} else {
			*prev += (uint64_t)(int64_t)d32;
		}
		v[i] = *prev;
	}
	return in;
}

/* The packed addresses of @st into @out (PACKED_MAX bytes); their length. */
static size_t pack_stack(const struct raw_stack *st, uint8_t *out)
{
	uint64_t prev = 0;
	uint8_t *end = pack_addrs(out, st->user, st->n_user, &prev);

	return (size_t)(pack_addrs(end, st->kernel, st->n_kernel, &prev) - out);
}

static size_t record_bytes(const struct record *r)
{
	return sizeof(*r) + r->packed_len;
}

static void free_stack(struct stack_store *ss, struct record *r)
{
	if (r)
		lp_slab__free(ss->slab, r, record_bytes(r));
}

struct stack_store *stack_store__new(bool per_thread)
{
	struct stack_store *ss = calloc(1, sizeof(*ss));

	if (!ss)
		return NULL;
	ss->per_thread = per_thread;
	stack_keyer__init(&ss->keyer, false);
	ss->table_cap = 1024;
	ss->table = calloc(ss->table_cap, sizeof(*ss->table));
	ss->slab = lp_slab__new();
	if (!ss->table || !ss->slab) {
		free(ss->table);
		lp_slab__delete(ss->slab);
		free(ss);
		return NULL;
	}
	return ss;
}

void stack_store__free(struct stack_store *ss)
{
	if (!ss)
		return;
	for (size_t id = 0; id < ss->n; id++)
		if (!(ss->seen[id] & SHED))
			free_stack(ss, ss->stacks[id]);
	for (size_t k = 0; k < SHED_KINDS; k++)
		free_stack(ss, ss->shed_kinds[k]);
	lp_slab__delete(ss->slab);
	free(ss->stacks);
	free(ss->hashes);
	free(ss->hashes2);
	free(ss->seen);
	free(ss->free_ids);
	free(ss->table);
	free(ss);
}

static uint64_t table_entry(uint64_t h, size_t id)
{
	return (h & 0xffffffff00000000ULL) | (uint32_t)(id + 1);
}

static int grow_table(struct stack_store *ss)
{
	size_t cap = ss->table_cap * 2;
	uint64_t *t = lp_zalloc_written(cap * sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t id = 0; id < ss->n; id++) {
		size_t i = ss->hashes[id] & (cap - 1);

		if (!ss->stacks[id])
			continue;
		while (t[i])
			i = (i + 1) & (cap - 1);
		t[i] = table_entry(ss->hashes[id], id);
	}
	free(ss->table);
	ss->table = t;
	ss->table_cap = cap;
	return 0;
}

/* Room for one more id at the end of the per-id arrays. */
static int grow_ids(struct stack_store *ss)
{
	size_t cap = ss->cap ? ss->cap * 2 : 1024;
	struct record **s = realloc(ss->stacks, cap * sizeof(*s));
	uint64_t *hs;
	uint32_t *seen;

	if (!s)
		return -ENOMEM;
	ss->stacks = s;
	hs = realloc(ss->hashes, cap * sizeof(*hs));
	if (!hs)
		return -ENOMEM;
	ss->hashes = hs;
	hs = realloc(ss->hashes2, cap * sizeof(*hs));
	if (!hs)
		return -ENOMEM;
	ss->hashes2 = hs;
	seen = realloc(ss->seen, cap * sizeof(*seen));
	if (!seen)
		return -ENOMEM;
	ss->seen = seen;
	ss->cap = cap;
	return 0;
}

static struct record *copy_stack(struct stack_store *ss, const struct raw_stack *st,
				 const uint8_t *packed, size_t len)
{
	struct record *r = lp_slab__alloc(ss->slab, sizeof(*r) + len);

	if (!r)
		return NULL;
	*r = (struct record){.pid = st->pid,
			     .tid = st->tid,
			     .flags = st->flags,
			     .n_user = st->n_user,
			     .n_kernel = st->n_kernel,
			     .packed_len = (uint16_t)len};
	memcpy(r->comm, st->comm, sizeof(r->comm));
	memcpy(r->packed, packed, len);
	return r;
}

void stack_store__prefetch_hash(const struct stack_store *ss, uint64_t h)
{
	__builtin_prefetch(&ss->table[h & (ss->table_cap - 1)]);
}

int64_t stack_store__intern(struct stack_store *ss, const struct raw_stack *st)
{
	struct stack_key k = stack_store__hash(ss, st);

	return stack_store__intern_hash(ss, st, &k);
}

/* The record every shed stack with @flags points to (no addresses, no
 * process), made on the first shed of its kind; NULL without memory. */
static struct record *shed_kind(struct stack_store *ss, uint32_t flags)
{
	struct record **kind = &ss->shed_kinds[flags];

	if (!*kind) {
		*kind = lp_slab__alloc(ss->slab, sizeof(**kind));
		if (*kind) /* its flags alone, for stack_store__flags() */
			**kind = (struct record){.flags = flags};
	}
	return *kind;
}

/* The record of @st with its addresses; NULL without memory. */
static struct record *record_of(struct stack_store *ss, const struct raw_stack *st)
{
	uint8_t packed[PACKED_MAX];

	return copy_stack(ss, st, packed, pack_stack(st, packed));
}

/*
 * Find @st by its key *@k, or add it: with its addresses, or @bare (shed
 * from the start) where its flags allow; *@added says which (if not NULL).
 */
static int64_t intern(struct stack_store *ss, const struct raw_stack *st, const struct stack_key *k,
		      bool bare, bool *added)
{
	uint64_t h = k->h;
	size_t i = h & (ss->table_cap - 1);
	struct record *copy;
	uint32_t id;

	if (st->n_user + st->n_kernel > STACK_STORE_MAX_ADDRS)
		return -E2BIG;
	while (ss->table[i]) {
		id = (uint32_t)ss->table[i] - 1;
		if ((ss->table[i] >> 32) == (h >> 32) && ss->hashes[id] == h &&
		    ss->hashes2[id] == k->h2) {
			ss->seen[id] = (ss->seen[id] & (PINNED | SHED)) | ss->epoch;
			if (added)
				*added = false;
			return id;
		}
		i = (i + 1) & (ss->table_cap - 1);
	}
	if (!ss->n_free && ss->n >= UINT32_MAX - 1)
		return -E2BIG;
	if (!ss->n_free && ss->n == ss->cap && grow_ids(ss))
		return -ENOMEM;
	bare = bare && st->flags < SHED_KINDS;
	copy = bare ? shed_kind(ss, st->flags) : record_of(ss, st);
	if (!copy)
		return -ENOMEM;
	id = ss->n_free ? ss->free_ids[--ss->n_free] : (uint32_t)ss->n++;
	ss->stacks[id] = copy;
	ss->hashes[id] = h;
	ss->hashes2[id] = k->h2;
	ss->seen[id] = ss->epoch | (bare ? SHED : 0);
	ss->shed += bare;
	ss->table[i] = table_entry(h, id);
	ss->live++;
	if (added)
		*added = true;
	/* Keep the load factor under one half. */
	if (ss->live * 2 > ss->table_cap && grow_table(ss))
		return -ENOMEM;
	return id;
}

int64_t stack_store__intern_hash(struct stack_store *ss, const struct raw_stack *st,
				 const struct stack_key *k)
{
	return intern(ss, st, k, false, NULL);
}

int64_t stack_store__intern_bare(struct stack_store *ss, const struct raw_stack *st,
				 const struct stack_key *k, bool *added)
{
	return intern(ss, st, k, true, added);
}

int stack_store__unshed(struct stack_store *ss, uint32_t id, const struct raw_stack *st)
{
	struct record *r;

	if (id >= ss->n || !ss->stacks[id] || !(ss->seen[id] & SHED) ||
	    st->n_user + st->n_kernel > STACK_STORE_MAX_ADDRS)
		return -EINVAL;
	r = record_of(ss, st);
	if (!r)
		return -ENOMEM;
	ss->stacks[id] = r;
	ss->seen[id] &= ~SHED;
	ss->shed--;
	return 0;
}

/* Take the entry of @id out of the table, moving later entries of its
 * probe run back so that no lookup stops at the hole. */
static void table_remove(struct stack_store *ss, uint32_t id)
{
	size_t mask = ss->table_cap - 1, i = ss->hashes[id] & mask, j;

	while ((uint32_t)ss->table[i] != id + 1)
		i = (i + 1) & mask;
	for (j = (i + 1) & mask; ss->table[j]; j = (j + 1) & mask) {
		size_t home = ss->hashes[(uint32_t)ss->table[j] - 1] & mask;

		/* the entry at j may fill the hole at i unless its home lies
		 * cyclically in (i, j] */
		if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
			ss->table[i] = ss->table[j];
			i = j;
		}
	}
	ss->table[i] = 0;
}

int stack_store__release(struct stack_store *ss, uint32_t id)
{
	if (id >= ss->n || !ss->stacks[id] || (ss->seen[id] & PINNED))
		return -EINVAL;
	if (ss->n_free == ss->cap_free) {
		size_t cap = ss->cap_free ? ss->cap_free * 2 : 1024;
		uint32_t *f = realloc(ss->free_ids, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		ss->free_ids = f;
		ss->cap_free = cap;
	}
	table_remove(ss, id);
	if (!(ss->seen[id] & SHED))
		free_stack(ss, ss->stacks[id]);
	ss->stacks[id] = NULL;
	ss->free_ids[ss->n_free++] = id;
	ss->live--;
	ss->released++;
	return 0;
}

void stack_store__pin(struct stack_store *ss, uint32_t id)
{
	if (id < ss->n && ss->stacks[id])
		ss->seen[id] |= PINNED;
}

int stack_store__shed(struct stack_store *ss, uint32_t id)
{
	struct record *r = id < ss->n ? ss->stacks[id] : NULL, *kind;

	if (!r || r->flags >= SHED_KINDS)
		return -EINVAL;
	if (ss->seen[id] & SHED)
		return 0;
	kind = shed_kind(ss, r->flags);
	if (!kind)
		return -ENOMEM;
	/* Its table entry and its key stay: it is found as before. */
	free_stack(ss, r);
	ss->stacks[id] = kind;
	ss->seen[id] |= SHED;
	ss->shed++;
	return 0;
}

uint64_t stack_store__shed_count(const struct stack_store *ss)
{
	return ss->shed;
}

void stack_store__set_epoch(struct stack_store *ss, uint32_t epoch)
{
	ss->epoch = epoch & ~(PINNED | SHED);
}

bool stack_store__idle_since(const struct stack_store *ss, uint32_t id, uint32_t epoch)
{
	return id < ss->n && ss->stacks[id] && !(ss->seen[id] & PINNED) &&
	       (ss->seen[id] & ~SHED) < epoch;
}

void stack_store__prefetch(const struct stack_store *ss, uint32_t id)
{
	const char *rec;
	size_t len;

	if (id >= ss->n || !ss->stacks[id])
		return;
	/* the record and its addresses are one block (copy_stack()) */
	rec = (const char *)ss->stacks[id];
	len = record_bytes(ss->stacks[id]);
	for (size_t off = 0; off < len; off += 64)
		__builtin_prefetch(rec + off);
}

bool stack_store__read(const struct stack_store *ss, uint32_t id, struct raw_stack *out,
		       uint64_t *addrs)
{
	const struct record *r = id < ss->n ? ss->stacks[id] : NULL;
	uint64_t prev = 0;

	if (!r || (ss->seen[id] & SHED))
		return false;
	*out = (struct raw_stack){.pid = r->pid,
				  .tid = r->tid,
				  .flags = r->flags,
				  .n_user = r->n_user,
				  .n_kernel = r->n_kernel,
				  .user = addrs,
				  .kernel = addrs + r->n_user};
	memcpy(out->comm, r->comm, sizeof(out->comm));
	unpack_addrs(r->packed, addrs, r->n_user + r->n_kernel, &prev);
	return true;
}

bool stack_store__flags(const struct stack_store *ss, uint32_t id, uint32_t *flags)
{
	const struct record *r = id < ss->n ? ss->stacks[id] : NULL;

	if (r)
		*flags = r->flags;
	return r != NULL;
}

size_t stack_store__count(const struct stack_store *ss)
{
	return ss->live;
}

size_t stack_store__id_bound(const struct stack_store *ss)
{
	return ss->n;
}

uint64_t stack_store__released(const struct stack_store *ss)
{
	return ss->released;
}
