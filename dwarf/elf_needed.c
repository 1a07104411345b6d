// SPDX-License-Identifier: GPL-2.0
/*
 * elf_needed.c - DT_NEEDED libraries, found as the dynamic linker would
 * (see elf_needed.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "elf_needed.h"
#include "probe_resolve.h"

#define MAX_DYN	    4096 /* dynamic entries looked at */
#define MAX_NEEDED  64	 /* libraries reported per file */
#define RUNPATH_MAX 1024

/* Where ld.so finds a DT_NEEDED library on Debian and on the usual
 * from-source installs, after the file's own run paths. */
static const char *const lib_dirs[] = {
	"/lib/x86_64-linux-gnu",
	"/usr/lib/x86_64-linux-gnu",
	"/lib64",
	"/usr/lib64",
	"/lib",
	"/usr/lib",
	"/usr/local/lib",
};

struct dyn_names {
	const char *needed[MAX_NEEDED]; /* in the file's string table */
	int n;
	char runpath[RUNPATH_MAX]; /* DT_RUNPATH, else DT_RPATH, "" if none */
};

/* The DT_NEEDED names and the run path of the dynamic section. */
static void read_dynamic(Elf *elf, struct dyn_names *dn)
{
	Elf_Scn *scn = NULL;
	bool have_runpath = false;

	memset(dn, 0, sizeof(*dn));
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0;
		     d && sh.sh_entsize && i < d->d_size / sh.sh_entsize && i < MAX_DYN; i++) {
			GElf_Dyn dyn;
			const char *s;

			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH &&
			    dyn.d_tag != DT_RPATH)
				continue;
			s = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			if (dyn.d_tag == DT_NEEDED && dn->n < MAX_NEEDED)
				dn->needed[dn->n++] = s;
			else if (dyn.d_tag == DT_RUNPATH ||
				 (!have_runpath && dyn.d_tag == DT_RPATH))
				snprintf(dn->runpath, sizeof(dn->runpath), "%s", s);
			have_runpath |= dyn.d_tag == DT_RUNPATH;
		}
		return;
	}
}

/* @dir/@name into @out if that file exists; "$ORIGIN" is @path's folder. */
static bool try_dir(const char *path, const char *dir, size_t dirlen, const char *name, char *out,
		    size_t cap)
{
	const char *slash = strrchr(path, '/');
	int n;

	if (dirlen >= 7 && !strncmp(dir, "$ORIGIN", 7)) {
		int olen = slash ? (int)(slash - path) : 1;

		n = snprintf(out, cap, "%.*s%.*s/%s", olen, slash ? path : ".", (int)(dirlen - 7),
			     dir + 7, name);
	} else {
		n = snprintf(out, cap, "%.*s/%s", (int)dirlen, dir, name);
	}
	return n > 0 && (size_t)n < cap && access(out, R_OK) == 0;
}

/* Where the dynamic linker would find @name for @path, into @out. */
static bool find_needed(const char *path, const char *runpath, const char *name, char *out,
			size_t cap)
{
	const char *p = runpath;

	if (strchr(name, '/'))
		return snprintf(out, cap, "%s", name) < (int)cap && access(out, R_OK) == 0;
	while (*p) {
		size_t len = strcspn(p, ":");

		if (len && try_dir(path, p, len, name, out, cap))
			return true;
		p += len + (p[len] == ':');
	}
	for (size_t i = 0; i < sizeof(lib_dirs) / sizeof(lib_dirs[0]); i++)
		if (try_dir(path, lib_dirs[i], strlen(lib_dirs[i]), name, out, cap))
			return true;
	return false;
}

int elf_needed_each(Elf *elf, const char *path, elf_needed_fn fn, void *ctx)
{
	struct dyn_names dn;
	char found[PATH_MAX];
	int r = 0;

	read_dynamic(elf, &dn);
	for (int i = 0; i < dn.n && !r; i++)
		r = fn(dn.needed[i],
		       find_needed(path, dn.runpath, dn.needed[i], found, sizeof(found)) ? found
											 : NULL,
		       ctx);
	return r;
}

static int needed_unsafe(const char *name, const char *found, void *ctx)
{
	(void)ctx;
	return lib_is_cxx_runtime(name) || (found && elf_path_uretprobe_unsafe(found));
}

bool elf_needed_uretprobe_unsafe(Elf *elf, const char *path)
{
	elf_version(EV_CURRENT);
	return elf_needed_each(elf, path, needed_unsafe, NULL) != 0;
}

/* PT_INTERP of @elf into @out; 0 or -ENOENT. */
static int interp_of(Elf *elf, int fd, char *out, size_t cap)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -ENOENT;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		ssize_t got;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_INTERP)
			continue;
		if (ph.p_filesz < 2 || ph.p_filesz > cap)
			return -ENOENT;
		got = pread(fd, out, ph.p_filesz, (off_t)ph.p_offset);
		/* a NUL-terminated absolute path, as the kernel takes it */
		if (got != (ssize_t)ph.p_filesz || out[ph.p_filesz - 1] || out[0] != '/' ||
		    strlen(out) != ph.p_filesz - 1)
			return -ENOENT;
		return 0;
	}
	return -ENOENT;
}

int elf_path_interp(const char *path, char *out, size_t cap)
{
	/* not blocking on a FIFO: only a regular file is read */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), r = -ENOENT;
	struct stat st;
	Elf *elf;

	if (fd < 0)
		return -ENOENT;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOENT;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF)
		r = interp_of(elf, fd, out, cap);
	if (elf)
		elf_end(elf);
	close(fd);
	return r;
}
