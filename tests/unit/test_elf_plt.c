// SPDX-License-Identifier: GPL-2.0
/*
 * test_elf_plt.c - PLT stubs named "func@plt" by elf_symtab, checked
 * against objdump's own names for them, in a program built here twice:
 * with the lazy .plt, and with IBT's .plt.sec. (Stubs in .plt.got, which
 * objdump names from .rela.dyn, are not named by liveprof.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"
#include "dwarf/elf_symtab.h"

static const char *const prog = "#include <stdio.h>\n#include <stdlib.h>\n"
				"int main(int c, char **v) { puts(v[0]); return atoi(v[0]) + c; }\n";

/* The [lo, hi) range of section @name in @path, from readelf. */
static bool section_range(const char *path, const char *name, uint64_t *lo, uint64_t *hi)
{
	FILE *p = unit_readelf("-W -S", path);
	char line[512];
	bool found = false;

	if (!p)
		return false;
	while (fgets(line, sizeof(line), p)) {
		char sec[64], type[64];
		unsigned long long addr, off, size;
		const char *at = strchr(line, ']');

		if (at && sscanf(at + 1, "%63s %63s %llx %llx %llx", sec, type, &addr, &off,
				 &size) == 5 && !strcmp(sec, name)) {
			*lo = addr;
			*hi = addr + size;
			found = true;
		}
	}
	pclose(p);
	return found;
}

/* Every stub objdump names in .plt/.plt.sec: liveprof gives it the same name. */
static void check_build(const char *dir, const char *tag, const char *flags)
{
	char src[128], bin[128], cmd[512], line[512];
	uint64_t lo = 0, hi = 0, lo2 = 0, hi2 = 0;
	struct elf_symtab *t = NULL;
	int named = 0;
	FILE *f, *p;

	snprintf(src, sizeof(src), "%s/%s.c", dir, tag);
	snprintf(bin, sizeof(bin), "%s/%s", dir, tag);
	f = fopen(src, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs(prog, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -O1 %s -o %s %s", flags, bin, src);
	CHECK(system(cmd) == 0);
	CHECK(section_range(bin, ".plt", &lo, &hi));
	section_range(bin, ".plt.sec", &lo2, &hi2);
	CHECK_EQ_INT(elf_symtab__open_path(bin, &t), 0);
	snprintf(cmd, sizeof(cmd), "objdump -d %s", bin);
	p = t ? popen(cmd, "r") : NULL;
	while (p && fgets(line, sizeof(line), p)) {
		unsigned long long addr;
		char name[128];
		const struct elf_sym *s;
		size_t len;

		/* "puts@plt"; not the resolver's stub, "<puts@plt-0x10>" */
		if (sscanf(line, "%llx <%127[^>]>:", &addr, name) != 2)
			continue;
		len = strlen(name);
		if (len < 5 || strcmp(name + len - 4, "@plt"))
			continue;
		if (!(addr >= lo && addr < hi) && !(addr >= lo2 && addr < hi2))
			continue;
		s = elf_symtab__lookup(t, addr + 4);
		if (!s)
			fprintf(stderr, "  %s: no symbol at 0x%llx (objdump: %s)\n", tag, addr, name);
		CHECK(s != NULL);
		if (s)
			CHECK_STR(s->name, name);
		named++;
	}
	if (p)
		pclose(p);
	/* puts and atoi's strtol at least */
	CHECK(named >= 2);
	elf_symtab__free(t);
}

UNIT_TEST(test_plt_stubs_named_like_objdump)
{
	char dir[] = "/tmp/lp_plt.XXXXXX", cmd[64];

	elf_version(EV_CURRENT);

	CHECK(mkdtemp(dir) != NULL);
	check_build(dir, "lazy", "");
	check_build(dir, "ibt", "-fcf-protection=full -Wl,-z,ibtplt");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

UNIT_MAIN()
