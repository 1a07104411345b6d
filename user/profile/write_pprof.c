// SPDX-License-Identifier: GPL-2.0
/*
 * write_pprof.c - gzip-compressed profile.proto, encoded by hand.
 *
 * Field numbers follow github.com/google/pprof/proto/profile.proto. Ids of
 * mappings, locations and functions start at 1 (0 means "none"); string 0
 * is "". Locations are interned by the frame ids they hold: a real function
 * frame and the inlined frames that follow it at the same address form one
 * location, its lines innermost first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "user/util/atomic_file.h"
#include "user/profile/pb_write.h"
#include "user/profile/writers.h"
#include "user/util/util.h"

/* profile.proto field numbers */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,
	LABEL_KEY = 1,
	LABEL_STR = 2,
	LABEL_NUM = 3,
	MAPPING_ID = 1,
	MAPPING_MEMORY_START = 2,
	MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILENAME = 5,
	MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9,
	MAPPING_HAS_INLINE_FRAMES = 10,
	LOCATION_ID = 1,
	LOCATION_MAPPING_ID = 2,
	LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1,
	LINE_LINE = 2,
	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
};

/* Each mapping gets a synthetic, disjoint address range of this size. */
#define MAPPING_SHIFT 44
#define MAPPING_SIZE  (1ULL << MAPPING_SHIFT)

/*
 * An insertion-ordered set of byte strings: the n-th distinct key gets id n
 * (1-based), which is exactly what pprof ids and the string table need.
 */
struct keyset {
	uint64_t *hashes;
	uint32_t *slots;
	size_t cap, n;
	uint8_t *keys;
	size_t keys_len, keys_cap;
	size_t *off;
	size_t off_cap;
};

static uint64_t hash_bytes(const void *data, size_t len)
{
	return lp_mix64(lp_fnv1a(LP_FNV_OFFSET, data, len));
}

static const uint8_t *keyset_key(const struct keyset *k, uint32_t id, size_t *len)
{
	*len = k->off[id] - k->off[id - 1];
	return k->keys + k->off[id - 1];
}

static int keyset_rehash(struct keyset *k)
{
	size_t cap = k->cap ? k->cap * 2 : 1024;
	uint64_t *h = calloc(cap, sizeof(*h));
	uint32_t *s = calloc(cap, sizeof(*s));

	if (!h || !s) {
		free(h);
		free(s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < k->cap; i++) {
		size_t j;

		if (!k->slots[i])
			continue;
		for (j = k->hashes[i] & (cap - 1); s[j]; j = (j + 1) & (cap - 1))
			;
		s[j] = k->slots[i];
		h[j] = k->hashes[i];
	}
	free(k->hashes);
	free(k->slots);
	k->hashes = h;
	k->slots = s;
	k->cap = cap;
	return 0;
}

/* Return: the id of @key (added if new, *@added set), or 0 when out of memory. */
static uint32_t keyset_add(struct keyset *k, const void *key, size_t len, bool *added)
{
	uint64_t h = hash_bytes(key, len);
	size_t i, klen;

	if (added)
		*added = false;
	if ((k->n + 1) * 2 > k->cap && keyset_rehash(k))
		return 0;
	for (i = h & (k->cap - 1); k->slots[i]; i = (i + 1) & (k->cap - 1)) {
		const uint8_t *c = keyset_key(k, k->slots[i], &klen);

		if (k->hashes[i] == h && klen == len && memcmp(c, key, len) == 0)
			return k->slots[i];
	}
	if (k->n + 2 > k->off_cap) {
		size_t cap = k->off_cap ? k->off_cap * 2 : 1024;
		size_t *n = realloc(k->off, cap * sizeof(*n));

		if (!n)
			return 0;
		k->off = n;
		k->off_cap = cap;
		if (!k->n)
			k->off[0] = 0;
	}
	if (k->keys_len + len > k->keys_cap) {
		size_t cap = k->keys_cap ? k->keys_cap : 4096;
		uint8_t *n;

		while (cap < k->keys_len + len)
			cap *= 2;
		n = realloc(k->keys, cap);
		if (!n)
			return 0;
		k->keys = n;
		k->keys_cap = cap;
	}
	if (len) /* keys may be empty (a sample with no frames) */
		memcpy(k->keys + k->keys_len, key, len);
	k->keys_len += len;
	k->n++;
	k->off[k->n] = k->keys_len;
	k->slots[i] = k->n;
	k->hashes[i] = h;
	if (added)
		*added = true;
	return k->n;
}

static void keyset_free(struct keyset *k)
{
	free(k->hashes);
	free(k->slots);
	free(k->keys);
	free(k->off);
}

struct pprof {
	const struct profile *p;
	struct keyset strs;   /* id - 1 = string table index */
	struct keyset funcs;  /* key: {name, file} string indexes */
	struct keyset maps;   /* key: {file, build_id} string indexes */
	struct keyset locs;   /* key: frame ids of the location, outermost first */
	uint32_t *frame_func; /* frame id -> function id */
	uint32_t *frame_map;  /* frame id -> mapping id, 0 for none */
	struct pbuf out;      /* the Profile message */
	struct pbuf tmp, tmp2;
};

/* Return: the string table index of @s ("" for NULL), or -ENOMEM. */
static int64_t str_idx(struct pprof *pp, const char *s)
{
	char *clean;
	uint32_t id;

	if (!s)
		s = "";
	/* protobuf strings must be UTF-8; names from binaries may be anything. */
	clean = writer__clean_utf8(s);
	if (!clean)
		return -ENOMEM;
	id = keyset_add(&pp->strs, clean, strlen(clean), NULL);
	free(clean);
	return id ? (int64_t)id - 1 : -ENOMEM;
}

static int add_mapping_and_function(struct pprof *pp, uint32_t fid, bool any_inlined)
{
	const struct frame *f = &pp->p->frames[fid];
	int64_t name, file, mfile, bid;
	uint32_t key[2], id;
	bool added;

	/* the process (and thread) roots become labels, not frames */
	if (f->kind == FRAME_ROOT)
		return 0;
	name = str_idx(pp, f->name);
	file = str_idx(pp, f->file);
	if (name < 0 || file < 0)
		return -ENOMEM;
	key[0] = name;
	key[1] = file;
	id = keyset_add(&pp->funcs, key, sizeof(key), &added);
	if (!id)
		return -ENOMEM;
	pp->frame_func[fid] = id;
	if (added) {
		struct pbuf *b = &pp->tmp;

		b->len = 0;
		pbw_uint(b, FUNCTION_ID, id);
		pbw_uint(b, FUNCTION_NAME, name);
		pbw_uint(b, FUNCTION_SYSTEM_NAME, name);
		pbw_uint(b, FUNCTION_FILENAME, file);
		pbw_msg(&pp->out, PROFILE_FUNCTION, b);
	}

	/* Synthetic frames (process name, markers) belong to no mapping. */
	if (f->kind == FRAME_ROOT || f->kind == FRAME_MARKER)
		return 0;
	if (f->kind == FRAME_KERNEL) {
		mfile = str_idx(pp, "[kernel]");
		bid = str_idx(pp, NULL);
	} else {
		if (!f->path && !f->module)
			return 0;
		mfile = str_idx(pp, f->path ? f->path : f->module);
		bid = str_idx(pp, f->build_id);
	}
	if (mfile < 0 || bid < 0)
		return -ENOMEM;
	key[0] = mfile;
	key[1] = bid;
	id = keyset_add(&pp->maps, key, sizeof(key), &added);
	if (!id)
		return -ENOMEM;
	pp->frame_map[fid] = id;
	if (added) {
		struct pbuf *b = &pp->tmp;

		b->len = 0;
		pbw_uint(b, MAPPING_ID, id);
		pbw_uint(b, MAPPING_MEMORY_START, (uint64_t)id << MAPPING_SHIFT);
		pbw_uint(b, MAPPING_MEMORY_LIMIT, ((uint64_t)id << MAPPING_SHIFT) + MAPPING_SIZE);
		pbw_uint(b, MAPPING_FILENAME, mfile);
		pbw_uint(b, MAPPING_BUILD_ID, bid);
		/* Symbolized already: keeps pprof from looking for the binaries. */
		pbw_uint(b, MAPPING_HAS_FUNCTIONS, 1);
		pbw_uint(b, MAPPING_HAS_FILENAMES, f->file != NULL);
		pbw_uint(b, MAPPING_HAS_LINE_NUMBERS, f->line > 0);
		pbw_uint(b, MAPPING_HAS_INLINE_FRAMES, any_inlined);
		pbw_msg(&pp->out, PROFILE_MAPPING, b);
	}
	return 0;
}

/* Frame @b was inlined into frame @a: same code address, so one location. */
static bool same_location(const struct frame *a, const struct frame *b)
{
	return b->inlined && a->kind == b->kind && a->kind != FRAME_ROOT &&
	       a->kind != FRAME_MARKER && a->addr == b->addr && a->path == b->path &&
	       a->module == b->module;
}

/* Return: the location id of frames @ids[0..@n), or 0 when out of memory. */
static uint32_t location(struct pprof *pp, const uint32_t *ids, uint32_t n)
{
	const struct frame *f = &pp->p->frames[ids[0]];
	struct pbuf *b = &pp->tmp, *line = &pp->tmp2;
	uint32_t id, map;
	bool added;

	id = keyset_add(&pp->locs, ids, n * sizeof(*ids), &added);
	if (!id || !added)
		return id;
	map = pp->frame_map[ids[0]];
	b->len = 0;
	pbw_uint(b, LOCATION_ID, id);
	pbw_uint(b, LOCATION_MAPPING_ID, map);
	if (map && f->addr)
		pbw_uint(b, LOCATION_ADDRESS,
			 ((uint64_t)map << MAPPING_SHIFT) + (f->addr & (MAPPING_SIZE - 1)));
	/* pprof wants the innermost (last inlined) function first. */
	for (uint32_t i = n; i-- > 0;) {
		line->len = 0;
		pbw_uint(line, LINE_FUNCTION_ID, pp->frame_func[ids[i]]);
		pbw_uint(line, LINE_LINE,
			 pp->p->frames[ids[i]].line > 0 ? (uint64_t)pp->p->frames[ids[i]].line : 0);
		pbw_msg(b, LOCATION_LINE, line);
	}
	pbw_msg(&pp->out, PROFILE_LOCATION, b);
	return b->oom || pp->out.oom ? 0 : id;
}

static void value_type(struct pprof *pp, unsigned field, int64_t type, int64_t unit)
{
	struct pbuf *b = &pp->tmp;

	b->len = 0;
	pbw_uint(b, VALUE_TYPE_TYPE, type);
	pbw_uint(b, VALUE_TYPE_UNIT, unit);
	pbw_msg(&pp->out, field, b);
}

/* Whether @f is the main function of a program (C's main, Go's main.main). */
static bool is_main_frame(const struct frame *f)
{
	return f->kind == FRAME_USER && !f->inlined && f->path &&
	       (!strcmp(f->name, "main") || !strcmp(f->name, "main.main"));
}

/* A string label @key = @value into the Sample being built in @sb; @b is scratch. */
static int str_label(struct pprof *pp, struct pbuf *b, struct pbuf *sb, const char *key,
		     const char *value)
{
	int64_t k = str_idx(pp, key), v = str_idx(pp, value);

	if (k < 0 || v < 0)
		return -ENOMEM;
	b->len = 0;
	pbw_uint(b, LABEL_KEY, k);
	pbw_uint(b, LABEL_STR, v);
	pbw_msg(sb, SAMPLE_LABEL, b);
	return 0;
}

/*
 * Go's convention: what a stack ran in is a label, not a frame. The
 * process root (name, and pid in its addr) becomes "process" and "pid",
 * a per-thread root ("comm-tid") "thread". Written into @sb, emptied first.
 */
static int root_labels(struct pprof *pp, const struct profile_sample *s, struct pbuf *sb)
{
	struct pbuf *b = &pp->tmp;
	int roots = 0;

	sb->len = 0;
	for (uint32_t d = 0; d < s->depth && roots < 2; d++) {
		const struct frame *f = &pp->p->frames[s->frames[d]];
		int64_t k;

		if (f->kind != FRAME_ROOT)
			continue;
		if (str_label(pp, b, sb, roots++ ? "thread" : "process", f->name))
			return -ENOMEM;
		if (roots == 1 && f->addr) {
			k = str_idx(pp, "pid");
			if (k < 0)
				return -ENOMEM;
			b->len = 0;
			pbw_uint(b, LABEL_KEY, k);
			pbw_uint(b, LABEL_NUM, f->addr);
			pbw_msg(sb, SAMPLE_LABEL, b);
		}
	}
	return b->oom || sb->oom ? -ENOMEM : 0;
}

/* A sample's location ids, grown to the deepest sample. */
struct loc_scratch {
	uint32_t *locs;
	size_t cap;
};

/* Sample @s as a Sample message into pp->out; @sb and @packed are scratch. */
static int encode_sample(struct pprof *pp, const struct pprof_opts *o,
			 const struct profile_sample *s, struct loc_scratch *ls, struct pbuf *sb,
			 struct pbuf *packed)
{
	const struct profile *p = pp->p;
	uint64_t weight = s->weight_ns;
	size_t nl = 0;
	int64_t vals[4];
	int err;

	if (o->n_types && !o->values(s, vals, o->ctx))
		return 0;
	if (s->depth > ls->cap) {
		uint32_t *n = realloc(ls->locs, s->depth * sizeof(*n));

		if (!n)
			return -ENOMEM;
		ls->locs = n;
		ls->cap = s->depth;
	}
	err = root_labels(pp, s, sb);
	if (err)
		return err;
	for (uint32_t d = 0, e; d < s->depth; d = e) {
		if (p->frames[s->frames[d]].kind == FRAME_ROOT) {
			e = d + 1;
			continue;
		}
		for (e = d + 1; e < s->depth &&
				same_location(&p->frames[s->frames[d]], &p->frames[s->frames[e]]);
		     e++)
			;
		ls->locs[nl] = location(pp, &s->frames[d], e - d);
		if (!ls->locs[nl++])
			return -ENOMEM;
	}
	packed->len = 0;
	/* pprof lists locations leaf first; ours are root first. */
	for (size_t j = nl; j-- > 0;)
		pbw_varint(packed, ls->locs[j]);
	pbw_msg(sb, SAMPLE_LOCATION_ID, packed);
	/* A sampled on-CPU profile may leave the weight to the period. */
	if (!weight && !o->wall)
		weight = s->count * p->period_ns;
	packed->len = 0;
	if (o->n_types) {
		for (int t = 0; t < o->n_types; t++)
			pbw_varint(packed, (uint64_t)vals[t]);
	} else {
		pbw_varint(packed, s->count);
		pbw_varint(packed, weight);
	}
	pbw_msg(sb, SAMPLE_VALUE, packed);
	for (uint32_t l = 0; l < s->n_labels; l++) {
		if (o->skip_label && !strcmp(s->labels[l].key, o->skip_label))
			continue;
		if (str_label(pp, packed, sb, s->labels[l].key, s->labels[l].value))
			return -ENOMEM;
	}
	pbw_msg(&pp->out, PROFILE_SAMPLE, sb);
	return 0;
}

static int encode(struct pprof *pp, const struct pprof_opts *o)
{
	const struct profile *p = pp->p;
	int64_t s_samples, s_count, s_time, s_ns, s_name, s_default;
	struct loc_scratch scratch = {0};
	struct pbuf sb = {0}, packed = {0};
	bool any_inlined = false;
	int err = 0;

	if (str_idx(pp, "") != 0)
		return -ENOMEM;
	if (o->n_types) {
		for (int t = 0; t < o->n_types; t++)
			value_type(pp, PROFILE_SAMPLE_TYPE, str_idx(pp, o->types[t][0]),
				   str_idx(pp, o->types[t][1]));
		s_time = str_idx(pp, o->period_type[0]);
		s_ns = str_idx(pp, o->period_type[1]);
		s_samples = s_count = 0;
	} else {
		s_samples = str_idx(pp, "samples");
		s_count = str_idx(pp, "count");
		s_time = str_idx(pp, o->wall ? "wall" : "cpu");
		s_ns = str_idx(pp, "nanoseconds");
		value_type(pp, PROFILE_SAMPLE_TYPE, s_samples, s_count);
		value_type(pp, PROFILE_SAMPLE_TYPE, s_time, s_ns);
	}
	s_name = str_idx(pp, p->name);
	/* Every string before the table is written. */
	s_default = o->default_type ? str_idx(pp, o->default_type) : 0;
	if (s_default < 0 || s_samples < 0 || s_count < 0 || s_time < 0 || s_ns < 0 || s_name < 0)
		return -ENOMEM;

	for (size_t i = 0; i < p->n_frames; i++)
		any_inlined |= p->frames[i].inlined;
	/*
	 * go tool pprof takes the first mapping for the main binary (the
	 * file it names, the binary -symbolize looks at): the one holding
	 * main, if any, goes first.
	 */
	for (size_t i = 0; i < p->n_frames; i++) {
		if (is_main_frame(&p->frames[i])) {
			err = add_mapping_and_function(pp, i, any_inlined);
			if (err)
				goto out;
			break;
		}
	}
	for (size_t i = 0; i < p->n_frames; i++) {
		err = add_mapping_and_function(pp, i, any_inlined);
		if (err)
			goto out;
	}

	for (size_t i = 0; i < p->n_samples; i++) {
		err = encode_sample(pp, o, &p->samples[i], &scratch, &sb, &packed);
		if (err)
			goto out;
	}

	for (uint32_t id = 1; id <= pp->strs.n; id++) {
		size_t len;
		const uint8_t *s = keyset_key(&pp->strs, id, &len);

		pbw_bytes(&pp->out, PROFILE_STRING_TABLE, s, len);
	}
	pbw_uint(&pp->out, PROFILE_TIME_NANOS, o->time_nanos);
	pbw_uint(&pp->out, PROFILE_DURATION_NANOS, p->duration_ns);
	value_type(pp, PROFILE_PERIOD_TYPE, s_time, s_ns);
	pbw_uint(&pp->out, PROFILE_PERIOD, p->period_ns);
	if (p->name && *p->name) {
		pbw_tag(&pp->out, PROFILE_COMMENT, WT_VARINT);
		pbw_varint(&pp->out, s_name);
	}
	if (s_default > 0)
		pbw_uint(&pp->out, PROFILE_DEFAULT_SAMPLE_TYPE, (uint64_t)s_default);
	if (pp->out.oom || pp->tmp.oom || sb.oom || packed.oom)
		err = -ENOMEM;
out:
	free(scratch.locs);
	free(sb.d);
	free(packed.d);
	return err;
}

int write_pprof(const struct profile *p, FILE *out, const struct pprof_opts *o)
{
	struct pprof_opts def = {0};
	struct pprof pp = {.p = p};
	int err;

	if (o)
		def = *o;
	if (!def.time_nanos) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		def.time_nanos = (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
		if (def.time_nanos > p->duration_ns)
			def.time_nanos -= p->duration_ns;
	}
	pp.frame_func = calloc(p->n_frames ? p->n_frames : 1, sizeof(*pp.frame_func));
	pp.frame_map = calloc(p->n_frames ? p->n_frames : 1, sizeof(*pp.frame_map));
	if (!pp.frame_func || !pp.frame_map) {
		err = -ENOMEM;
		goto out;
	}
	err = encode(&pp, &def);
	if (!err)
		err = pbw_gzip(out, pp.out.d, pp.out.len);
out:
	keyset_free(&pp.strs);
	keyset_free(&pp.funcs);
	keyset_free(&pp.maps);
	keyset_free(&pp.locs);
	free(pp.frame_func);
	free(pp.frame_map);
	free(pp.out.d);
	free(pp.tmp.d);
	free(pp.tmp2.d);
	return err;
}

int write_pprof_file(const struct profile *p, const char *path, const struct pprof_opts *o)
{
	struct atomic_file af;
	int err;

	err = atomic_file__open(&af, path);
	if (err)
		return err;
	err = write_pprof(p, af.fp, o);
	if (err) {
		atomic_file__abort(&af);
		return err;
	}
	return atomic_file__commit(&af);
}
