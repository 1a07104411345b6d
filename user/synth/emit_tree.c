// SPDX-License-Identifier: GPL-2.0
/*
 * emit_tree.c - merge a profile's stacks into the call tree that a
 * synthetic program reproduces, and name its functions for a language.
 *
 * Nothing here recurses over the tree: a hostile profile may be thousands
 * of frames deep, and node ids grow from parents to children, so every
 * bottom-up pass is a reverse loop over the node array.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user/synth/emit_tree.h"
#include "user/util/util.h"

/* Open addressing with linear probing; keys are 64-bit, 0 is never a key. */
struct u64_map {
	uint64_t *keys;
	uint32_t *vals;
	size_t cap, len; /* cap is a power of two, len <= cap / 2 */
};

static uint64_t hash_str(const char *s)
{
	/* Keep 0 free as the empty-slot marker. */
	return lp_mix64(lp_fnv1a(LP_FNV_OFFSET, s, strlen(s))) | 1;
}

static int map_init(struct u64_map *m, size_t cap)
{
	m->keys = calloc(cap, sizeof(*m->keys));
	m->vals = calloc(cap, sizeof(*m->vals));
	m->cap = cap;
	m->len = 0;
	if (!m->keys || !m->vals) {
		free(m->keys);
		free(m->vals);
		m->keys = NULL;
		m->vals = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void map_free(struct u64_map *m)
{
	free(m->keys);
	free(m->vals);
}

/* Index of @key's slot, or of the empty slot where it would go. */
static size_t map_slot(const struct u64_map *m, uint64_t key)
{
	size_t i = lp_mix64(key) & (m->cap - 1);

	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static int map_put(struct u64_map *m, uint64_t key, uint32_t val)
{
	size_t i;

	if ((m->len + 1) * 2 > m->cap) {
		struct u64_map n;
		size_t j;

		if (map_init(&n, m->cap * 2))
			return -ENOMEM;
		for (j = 0; j < m->cap; j++) {
			if (!m->keys[j])
				continue;
			i = map_slot(&n, m->keys[j]);
			n.keys[i] = m->keys[j];
			n.vals[i] = m->vals[j];
		}
		n.len = m->len;
		map_free(m);
		*m = n;
	}
	i = map_slot(m, key);
	if (!m->keys[i])
		m->len++;
	m->keys[i] = key;
	m->vals[i] = val;
	return 0;
}

static int add_node(struct emit_tree *t, uint32_t parent, uint32_t name, uint32_t *id)
{
	struct emit_node *n;

	if (t->n_nodes >= UINT32_MAX - 1)
		return -E2BIG;
	if (t->n_nodes == t->cap_nodes) {
		size_t cap = t->cap_nodes ? t->cap_nodes * 2 : 256;
		struct emit_node *nodes = realloc(t->nodes, cap * sizeof(*nodes));

		if (!nodes)
			return -ENOMEM;
		t->nodes = nodes;
		t->cap_nodes = cap;
	}
	*id = (uint32_t)t->n_nodes++;
	n = &t->nodes[*id];
	memset(n, 0, sizeof(*n));
	n->name = name;
	n->parent = parent;
	n->first_child = n->last_child = n->next_sibling = EMIT_NONE;
	if (parent != EMIT_NONE) {
		struct emit_node *p = &t->nodes[parent];

		n->depth = p->depth + 1;
		if (p->last_child == EMIT_NONE)
			p->first_child = *id;
		else
			t->nodes[p->last_child].next_sibling = *id;
		p->last_child = *id;
	}
	return 0;
}

/*
 * Names are keyed by string hash; a collision of two different names on the
 * full 64-bit hash is resolved by probing on with a perturbed key.
 */
static int name_index(struct emit_tree *t, struct u64_map *m, const char *s, uint32_t *idx)
{
	uint64_t key = hash_str(s);
	size_t slot;

	for (;;) {
		slot = map_slot(m, key);
		if (!m->keys[slot])
			break;
		if (strcmp(t->names[m->vals[slot]].orig, s) == 0) {
			*idx = m->vals[slot];
			return 0;
		}
		key = lp_mix64(key) | 1;
	}
	if (t->n_names == t->cap_names) {
		size_t cap = t->cap_names ? t->cap_names * 2 : 128;
		struct emit_name *names = realloc(t->names, cap * sizeof(*names));

		if (!names)
			return -ENOMEM;
		t->names = names;
		t->cap_names = cap;
	}
	memset(&t->names[t->n_names], 0, sizeof(t->names[0]));
	t->names[t->n_names].orig = strdup(s);
	if (!t->names[t->n_names].orig)
		return -ENOMEM;
	*idx = (uint32_t)t->n_names++;
	return map_put(m, key, *idx);
}

/* Intern every frame's name; @frame_name[i] gets frame i's name index. */
static int name_frames(struct emit_tree *t, const struct profile *p, struct u64_map *names,
		       uint32_t *frame_name)
{
	size_t i;
	int ret;

	for (i = 0; i < p->n_frames; i++) {
		ret = name_index(t, names, p->frames[i].name ? p->frames[i].name : "[unknown]",
				 &frame_name[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* The child of @node called @name, made if it is not there yet. */
static int child_of(struct emit_tree *t, struct u64_map *children, uint32_t node, uint32_t name,
		    uint32_t *child)
{
	/* +1 keeps the key non-zero for the root's children. */
	uint64_t key = ((uint64_t)node << 32 | name) + 1;
	size_t slot = map_slot(children, key);
	int ret;

	if (children->keys[slot]) {
		*child = children->vals[slot];
		return 0;
	}
	ret = add_node(t, node, name, child);
	if (!ret)
		ret = map_put(children, key, *child);
	return ret;
}

/* Merge every sample's stack into the tree under @root, counting self. */
static int add_samples(struct emit_tree *t, const struct profile *p, const uint32_t *frame_name,
		       struct u64_map *children, uint32_t root)
{
	size_t i, j;
	int ret;

	for (i = 0; i < p->n_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint32_t node = root;

		for (j = 0; j < s->depth; j++) {
			uint32_t fid = s->frames[j];

			if (fid >= p->n_frames)
				return -EINVAL;
			if (j == EMIT_MAX_DEPTH) {
				t->truncated += s->count;
				break;
			}
			ret = child_of(t, children, node, frame_name[fid], &node);
			if (ret)
				return ret;
		}
		t->nodes[node].self += s->count;
		t->total += s->count;
	}
	return 0;
}

/* Children come after their parent, so one reverse pass sums totals. */
static void sum_totals(struct emit_tree *t)
{
	size_t i;

	for (i = t->n_nodes; i-- > 0;) {
		struct emit_node *n = &t->nodes[i];

		n->total += n->self;
		if (n->parent != EMIT_NONE)
			t->nodes[n->parent].total += n->total;
		if (n->depth > t->max_depth)
			t->max_depth = n->depth;
		if (n->name != EMIT_NONE) {
			t->names[n->name].count++;
			t->names[n->name].self += n->self;
		}
	}
}

/* Group node ids by name (a counting sort, stable in node order). */
static int group_by_name(struct emit_tree *t)
{
	uint32_t *fill;
	size_t i, j;

	t->name_nodes = calloc(t->n_nodes, sizeof(*t->name_nodes));
	fill = calloc(t->n_names ? t->n_names : 1, sizeof(*fill));
	if (!t->name_nodes || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (i = 0, j = 0; i < t->n_names; i++) {
		t->names[i].first = (uint32_t)j;
		j += t->names[i].count;
	}
	for (i = 1; i < t->n_nodes; i++) {
		struct emit_name *nm = &t->names[t->nodes[i].name];

		t->name_nodes[nm->first + fill[t->nodes[i].name]++] = (uint32_t)i;
	}
	free(fill);
	return 0;
}

int emit_tree__build(struct emit_tree *t, const struct profile *p)
{
	struct u64_map names = {0}, children = {0};
	uint32_t *frame_name = NULL;
	uint32_t root;
	int ret;

	if (!p->n_samples)
		return -EINVAL;
	ret = map_init(&names, 256);
	if (!ret)
		ret = map_init(&children, 1024);
	if (ret)
		goto out;
	frame_name = calloc(p->n_frames ? p->n_frames : 1, sizeof(*frame_name));
	if (!frame_name) {
		ret = -ENOMEM;
		goto out;
	}
	ret = name_frames(t, p, &names, frame_name);
	if (!ret)
		ret = add_node(t, EMIT_NONE, EMIT_NONE, &root);
	if (!ret)
		ret = add_samples(t, p, frame_name, &children, root);
	if (ret)
		goto out;
	sum_totals(t);
	ret = group_by_name(t);
	if (!ret)
		ret = t->total ? 0 : -EINVAL;
out:
	map_free(&names);
	map_free(&children);
	free(frame_name);
	return ret;
}

void emit_tree__free(struct emit_tree *t)
{
	size_t i;

	for (i = 0; i < t->n_names; i++) {
		free(t->names[i].orig);
		free(t->names[i].ident);
	}
	free(t->names);
	free(t->nodes);
	free(t->name_nodes);
	memset(t, 0, sizeof(*t));
}

static bool in_list(const char *s, const char *const *list)
{
	for (; list && *list; list++)
		if (strcmp(*list, s) == 0)
			return true;
	return false;
}

static bool is_reserved(const char *s, const struct emit_ident_rules *r)
{
	if (r->internal_prefix && strncmp(s, r->internal_prefix, strlen(r->internal_prefix)) == 0)
		return true;
	return in_list(s, r->reserved) || (r->is_reserved && r->is_reserved(s));
}

static bool is_ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

char *emit_sanitize(const char *name, const struct emit_ident_rules *r)
{
	size_t max = r->max_len ? r->max_len : 128;
	size_t n = strlen(name), i, o = 0;
	size_t slen = r->suffix ? strlen(r->suffix) : 0;
	char *s;

	if (n > max)
		n = max;
	/* Room for a '_' prefix, the suffix (maybe twice) and the NUL. */
	s = malloc(n + 2 + 2 * slen + 1);
	if (!s)
		return NULL;
	if (n == 0 || (name[0] >= '0' && name[0] <= '9'))
		s[o++] = '_';
	for (i = 0; i < n; i++)
		s[o++] = is_ident_char(name[i]) ? name[i] : '_';
	s[o] = '\0';
	/*
	 * One suffix takes a name out of the prefix and pattern rules (the
	 * runtimes' own names never end in the suffix); a suffixed name that is
	 * itself a listed word gets a second one.
	 */
	if (slen && is_reserved(s, r)) {
		memcpy(s + o, r->suffix, slen + 1);
		o += slen;
		if (in_list(s, r->reserved)) {
			memcpy(s + o, r->suffix, slen + 1);
			o += slen;
		}
	}
	return s;
}

/* Is @id already taken? *@key receives the slot key to insert it under. */
static bool ident_taken(const struct emit_tree *t, const struct u64_map *seen, const char *id,
			uint64_t *key)
{
	uint64_t k = hash_str(id);
	size_t slot;

	for (;;) {
		slot = map_slot(seen, k);
		if (!seen->keys[slot])
			break;
		if (strcmp(t->names[seen->vals[slot]].ident, id) == 0)
			return true;
		k = lp_mix64(k) | 1;
	}
	*key = k;
	return false;
}

int emit_tree__idents(struct emit_tree *t, const struct emit_ident_rules *r)
{
	struct u64_map seen = {0};
	size_t i;
	int ret;

	ret = map_init(&seen, 256);
	if (ret)
		return ret;
	for (i = 0; i < t->n_names; i++) {
		struct emit_name *nm = &t->names[i];
		char *base, *id;
		unsigned int k;
		uint64_t key;

		free(nm->ident);
		nm->ident = NULL;
		base = emit_sanitize(nm->orig, r);
		if (!base) {
			ret = -ENOMEM;
			goto out;
		}
		id = base;
		for (k = 2; ident_taken(t, &seen, id, &key); k++) {
			if (id != base)
				free(id);
			if (asprintf(&id, "%s_%u", base, k) < 0) {
				free(base);
				ret = -ENOMEM;
				goto out;
			}
		}
		if (id != base)
			free(base);
		nm->ident = id;
		nm->renamed = strcmp(id, nm->orig) != 0;
		ret = map_put(&seen, key, (uint32_t)i);
		if (ret)
			goto out;
	}
out:
	map_free(&seen);
	return ret;
}
