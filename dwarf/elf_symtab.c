// SPDX-License-Identifier: GPL-2.0
/*
 * elf_symtab.c - build-id, PT_LOAD segments and function symbols of one ELF.
 *
 * Everything here may be fed a hostile or truncated file: only gelf_*
 * accessors are used, every count is bounded by the data that holds it,
 * and the file is read (ELF_C_READ), never mmapped, so a truncation after
 * open gives an error instead of SIGBUS.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf_symtab.h"
#include "dwarf/debuginfo.h"
#include "dwarf/elf_plt.h"
#include "dwarf/probe_prove.h"
#include "sym_dwarf.h"
#include "user/util/util.h"

#define MAX_LOADS	 256	    /* real files have 2-6 */
#define MAX_SYMS	 (1u << 24) /* beyond that the section is garbage */
#define MAX_OVERLAP_WALK 16	    /* how far back lookup looks for an enclosing symbol */

static void hexify(const unsigned char *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

/* Scan one block of notes for NT_GNU_BUILD_ID; 0 when found. */
static int find_build_id_in(Elf_Data *data, char *hex)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	if (!data || !data->d_buf)
		return -ENOENT;
	while (off < data->d_size &&
	       (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz > 0 &&
		    nh.n_descsz <= ELF_BUILD_ID_MAX &&
		    !memcmp((char *)data->d_buf + name_off, "GNU", 4)) {
			hexify((unsigned char *)data->d_buf + desc_off, nh.n_descsz, hex);
			return 0;
		}
		off = next;
	}
	return -ENOENT;
}

static void read_build_id(Elf *elf, char *hex)
{
	size_t phnum = 0;
	Elf_Scn *scn = NULL;
	GElf_Phdr ph;
	GElf_Shdr sh;

	hex[0] = '\0';
	/* PT_NOTE first: present even when section headers were stripped */
	if (elf_getphdrnum(elf, &phnum) == 0) {
		for (size_t i = 0; i < phnum && i < MAX_LOADS; i++) {
			if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_NOTE)
				continue;
			Elf_Data *d =
				elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz,
						     ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
			if (find_build_id_in(d, hex) == 0)
				return;
		}
	}
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		if (find_build_id_in(elf_getdata(scn, NULL), hex) == 0)
			return;
	}
}

static int read_loads(struct elf_symtab *t)
{
	size_t phnum = 0, n = 0;
	GElf_Phdr ph;

	if (elf_getphdrnum(t->elf, &phnum) != 0)
		return -ENOEXEC;
	if (phnum > MAX_LOADS)
		phnum = MAX_LOADS;
	t->loads = calloc(phnum ? phnum : 1, sizeof(*t->loads));
	if (!t->loads)
		return -ENOMEM;
	for (size_t i = 0; i < phnum; i++) {
		if (!gelf_getphdr(t->elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		t->loads[n].offset = ph.p_offset;
		t->loads[n].vaddr = ph.p_vaddr;
		t->loads[n].filesz = ph.p_filesz;
		t->loads[n].memsz = ph.p_memsz;
		t->loads[n].flags = ph.p_flags;
		n++;
	}
	t->nloads = n;
	return 0;
}

static int open_common(Elf *elf, struct elf_symtab *t)
{
	GElf_Ehdr eh;
	int err;

	t->elf = elf;
	t->dbg_fd = -1;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return -ENOEXEC;
	err = read_loads(t);
	if (err)
		return err;
	read_build_id(elf, t->build_id);
	return 0;
}

/* A table over @elf (NULL: elf_begin failed), which it then owns. */
static int open_elf(Elf *elf, int fd, void *image, struct elf_symtab **out)
{
	struct elf_symtab *t;
	int err;

	*out = NULL;
	if (!elf)
		return -ENOEXEC;
	t = calloc(1, sizeof(*t));
	if (!t) {
		elf_end(elf);
		return -ENOMEM;
	}
	err = open_common(elf, t);
	if (err) {
		elf_end(elf);
		free(t->loads);
		free(t);
		return err;
	}
	t->fd = fd;
	t->image = image;
	*out = t;
	return 0;
}

int elf_symtab__open_fd(int fd, struct elf_symtab **out)
{
	elf_version(EV_CURRENT);
	return open_elf(elf_begin(fd, ELF_C_READ, NULL), fd, NULL, out);
}

int elf_symtab__open_path(const char *path, struct elf_symtab **out)
{
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = elf_symtab__open_fd(fd, out);
	if (err) {
		close(fd);
		return err;
	}
	/* without a path .gnu_debuglink cannot be followed: not fatal */
	elf_symtab__set_path(*out, path);
	return 0;
}

int elf_symtab__set_path(struct elf_symtab *t, const char *path)
{
	char *p = path ? strdup(path) : NULL;

	if (path && !p)
		return -ENOMEM;
	free(t->path);
	t->path = p;
	return 0;
}

int elf_symtab__open_mem(void *image, size_t size, struct elf_symtab **out)
{
	elf_version(EV_CURRENT);
	return open_elf(elf_memory(image, size), -1, image, out);
}

void elf_symtab__free(struct elf_symtab *t)
{
	if (!t)
		return;
	sym_dwarf__release(t);
	probe_prover__free(t->fdes);
	if (t->dwarf)
		dwarf_end(t->dwarf);
	if (t->dbg_elf)
		elf_end(t->dbg_elf);
	if (t->dbg_fd >= 0)
		close(t->dbg_fd);
	if (t->elf)
		elf_end(t->elf);
	if (t->fd >= 0)
		close(t->fd);
	free(t->image);
	free(t->path);
	free(t->loads);
	free(t->syms);
	free(t->names);
	free(t);
}

int elf_symtab__offset_to_vaddr(const struct elf_symtab *t, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < t->nloads; i++) {
		const struct elf_load *l = &t->loads[i];

		if (off >= l->offset && off - l->offset < l->filesz) {
			*vaddr = off - l->offset + l->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

/* A symbol while loading: name as an offset in the growing pool. */
struct raw_sym {
	uint64_t addr, size;
	size_t name_off;
	uint32_t shndx;
	unsigned char bind;
};

static int raw_cmp(const void *a, const void *b)
{
	const struct raw_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* among aliases, the best one first: sized, then global, weak, local */
	if (!x->size != !y->size)
		return x->size ? -1 : 1;
	if (x->bind != y->bind) {
		int rx = x->bind == STB_GLOBAL ? 0 : x->bind == STB_WEAK ? 1 : 2;
		int ry = y->bind == STB_GLOBAL ? 0 : y->bind == STB_WEAK ? 1 : 2;

		if (rx != ry)
			return rx - ry;
	}
	/* stable among equals so results do not depend on qsort */
	return x->name_off < y->name_off ? -1 : x->name_off > y->name_off;
}

static Elf_Scn *find_symtab(Elf *elf, GElf_Shdr *shdr, bool *dyn)
{
	Elf_Scn *scn = NULL, *dynscn = NULL;
	GElf_Shdr sh, dynsh;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_size == 0)
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			*shdr = sh;
			*dyn = false;
			return scn;
		}
		if (sh.sh_type == SHT_DYNSYM && !dynscn) {
			dynscn = scn;
			dynsh = sh;
		}
	}
	if (dynscn) {
		*shdr = dynsh;
		*dyn = true;
	}
	return dynscn;
}

/* End of the executable section @shndx, or 0 if it has none. */
static uint64_t section_end(Elf *elf, uint32_t shndx, uint64_t addr)
{
	GElf_Shdr sh;
	Elf_Scn *scn;

	if (shndx == SHN_UNDEF || shndx >= SHN_LORESERVE)
		return 0;
	scn = elf_getscn(elf, shndx);
	if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR))
		return 0;
	if (addr < sh.sh_addr || addr - sh.sh_addr >= sh.sh_size)
		return 0;
	return sh.sh_addr + sh.sh_size;
}

Elf *elf_symtab__debug_elf(struct elf_symtab *t)
{
	if (t->dbg_elf || t->dbg_fd >= 0 || t->dbg_tried)
		return t->dbg_elf;
	t->dbg_tried = true;
	/* a memory image (the vdso) has no debug file anywhere */
	if (t->fd < 0)
		return NULL;
	t->dbg_fd = debuginfo__find_debug(t->elf, t->path, NULL, 0, &t->dbg_how);
	if (t->dbg_fd < 0) {
		t->dbg_fd = -1;
		return NULL;
	}
	t->dbg_elf = elf_begin(t->dbg_fd, ELF_C_READ, NULL);
	if (t->dbg_elf && elf_kind(t->dbg_elf) != ELF_K_ELF) {
		elf_end(t->dbg_elf);
		t->dbg_elf = NULL;
	}
	return t->dbg_elf;
}

/* The raw function symbols of one table, names copied into a pool. */
struct raw_syms {
	struct raw_sym *v;
	size_t n, cap;
	char *pool;
	size_t pool_len, pool_cap;
};

/*
 * The symbol table to read: .symtab, else .dynsym. Stripped binaries'
 * .dynsym lacks every local function (libc's __lll_lock_wait, for one);
 * the debug file's .symtab has them all, so it wins over .dynsym.
 */
static Elf_Scn *pick_symtab(struct elf_symtab *t, Elf **elf, GElf_Shdr *sh)
{
	Elf_Scn *scn = find_symtab(*elf, sh, &t->from_dynsym);

	if (!scn || t->from_dynsym) {
		Elf *dbg = elf_symtab__debug_elf(t);
		GElf_Shdr dsh;
		bool dyn;
		Elf_Scn *dscn = dbg ? find_symtab(dbg, &dsh, &dyn) : NULL;

		if (dscn && !dyn) {
			*elf = dbg;
			*sh = dsh;
			t->from_dynsym = false;
			return dscn;
		}
	}
	return scn;
}

/* Append one function symbol, its name followed by @suffix; -ENOMEM on failure. */
static int raw_add(struct raw_syms *r, const GElf_Sym *sym, const char *name, const char *suffix)
{
	/* .symtab spells versioned symbols "memcpy@@GLIBC_2.14": profiles
	 * show the name a programmer would write. */
	size_t base = strcspn(name + 1, "@") + 1, slen = strlen(suffix), len = base + slen + 1;

	if (r->pool_len + len > r->pool_cap) {
		size_t cap = (r->pool_cap + len) * 2;
		char *p = realloc(r->pool, cap);

		if (!p)
			return -ENOMEM;
		r->pool = p;
		r->pool_cap = cap;
	}
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 256;
		struct raw_sym *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	memcpy(r->pool + r->pool_len, name, base);
	memcpy(r->pool + r->pool_len + base, suffix, slen + 1);
	r->v[r->n] = (struct raw_sym){
		.addr = sym->st_value,
		.size = sym->st_size,
		.name_off = r->pool_len,
		.shndx = sym->st_shndx,
		.bind = GELF_ST_BIND(sym->st_info),
	};
	r->pool_len += len;
	r->n++;
	return 0;
}

/* Every defined function symbol of @scn (a symbol table of @elf). */
static int collect_raw(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct raw_syms *r)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t entsz = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT), count;

	if (!data || !entsz)
		return 0;
	count = data->d_size / entsz;
	if (count > MAX_SYMS)
		count = MAX_SYMS;
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;
		const char *name;
		int type;

		if (!gelf_getsym(data, i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
		    sym.st_value == 0)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (name && *name && raw_add(r, &sym, name, ""))
			return -ENOMEM;
	}
	return 0;
}

/*
 * Size of raw symbol @i of the sorted @raw. Assembly without .size runs to
 * the next symbol or to the end of its section, whichever is first; with
 * neither, it matches its address only.
 */
static uint64_t raw_size(Elf *elf, const struct raw_sym *raw, size_t nraw, size_t i)
{
	uint64_t end;
	size_t j = i + 1;

	if (raw[i].size)
		return raw[i].size;
	end = section_end(elf, raw[i].shndx, raw[i].addr);
	while (j < nraw && raw[j].addr == raw[i].addr)
		j++;
	if (j < nraw && (!end || raw[j].addr < end))
		end = raw[j].addr;
	return end > raw[i].addr ? end - raw[i].addr : 0;
}

/* A PLT stub as a symbol "func@plt" (elf_plt__for_each). */
static int add_plt_stub(void *ctx, uint64_t addr, uint64_t size, const char *func)
{
	GElf_Sym sym = {.st_value = addr, .st_size = size, .st_info = GELF_ST_INFO(STB_LOCAL, STT_FUNC)};

	return raw_add(ctx, &sym, func, "@plt");
}

static int load_syms(struct elf_symtab *t)
{
	struct raw_syms r = {0};
	Elf *elf = t->elf;
	GElf_Shdr sh;
	Elf_Scn *scn = pick_symtab(t, &elf, &sh);
	size_t n = 0;
	int err;

	if (!scn)
		return 0;
	err = collect_raw(elf, scn, &sh, &r);
	/* the stubs are in the file itself (a debug file's .plt has no bytes) */
	if (!err)
		err = elf_plt__for_each(t->elf, add_plt_stub, &r);
	if (err || !r.n)
		goto out;
	qsort(r.v, r.n, sizeof(*r.v), raw_cmp);
	t->syms = calloc(r.n, sizeof(*t->syms));
	if (!t->syms) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < r.n; i++) {
		/* aliases: the first (best) of each address wins */
		if (n && t->syms[n - 1].addr == r.v[i].addr)
			continue;
		t->syms[n].addr = r.v[i].addr;
		t->syms[n].size = raw_size(elf, r.v, r.n, i);
		t->syms[n].name = r.pool + r.v[i].name_off;
		n++;
	}
	t->nsyms = n;
	t->names = r.pool;
	r.pool = NULL;
out:
	free(r.v);
	free(r.pool);
	return err;
}

const struct elf_sym *elf_symtab__lookup(struct elf_symtab *t, uint64_t vaddr)
{
	size_t lo;

	if (!t->syms_loaded) {
		t->syms_loaded = true;
		if (load_syms(t))
			return NULL;
	}
	/* first symbol with addr > vaddr */
	lo = lp_upper_bound(t->syms, t->nsyms, sizeof(*t->syms), offsetof(struct elf_sym, addr),
			    vaddr);
	/* the nearest may be a small symbol nested in a bigger one: look back a bit */
	for (size_t k = 0; k < MAX_OVERLAP_WALK && lo > 0; k++, lo--) {
		const struct elf_sym *s = &t->syms[lo - 1];

		if (vaddr - s->addr < s->size || vaddr == s->addr)
			return s;
	}
	return NULL;
}

/* @name among the defined symbols of one symbol table section. */
static int find_sym_in(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, const char *name, GElf_Sym *out)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t entsz = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT), count;

	if (!data || !entsz)
		return -ENOENT;
	count = data->d_size / entsz;
	if (count > MAX_SYMS)
		count = MAX_SYMS;
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;
		const char *n;

		if (!gelf_getsym(data, i, &sym))
			break;
		if (sym.st_shndx == SHN_UNDEF || !sym.st_name)
			continue;
		n = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (n && !strcmp(n, name)) {
			*out = sym;
			return 0;
		}
	}
	return -ENOENT;
}

int elf_symtab__find_sym(struct elf_symtab *t, const char *name, GElf_Sym *sym)
{
	static const Elf64_Word order[] = {SHT_SYMTAB, SHT_DYNSYM};

	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		Elf_Scn *scn = NULL;
		GElf_Shdr sh;

		while ((scn = elf_nextscn(t->elf, scn))) {
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != order[k] || !sh.sh_size)
				continue;
			if (find_sym_in(t->elf, scn, &sh, name, sym) == 0)
				return 0;
		}
	}
	return -ENOENT;
}

Elf_Data *elf_symtab__sym_data(struct elf_symtab *t, const GElf_Sym *sym, Elf_Type type)
{
	for (size_t i = 0; i < t->nloads; i++) {
		const struct elf_load *l = &t->loads[i];
		uint64_t rel = sym->st_value - l->vaddr;
		Elf_Data *d;

		if (sym->st_value < l->vaddr || rel >= l->filesz || l->filesz - rel < sym->st_size)
			continue;
		d = elf_getdata_rawchunk(t->elf, (int64_t)(l->offset + rel), sym->st_size, type);
		return d && d->d_buf && d->d_size == sym->st_size ? d : NULL;
	}
	return NULL;
}
