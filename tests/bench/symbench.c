/*
 * symbench.c - symbolization speed of dwarf/symbolize.c over a large binary.
 *
 * Picks N pseudo-random addresses in the executable PT_LOAD of a shared
 * library this process has mapped (libc by default), writes them as ELF
 * vaddrs in hex to ADDR_FILE (one per line, for `eu-addr2line -f -e LIB`),
 * then resolves them all through a fresh symbolizer on our own pid and
 * prints one line: "addrs N named M ns_total T ns_per_addr P".
 *
 * Usage: symbench LINES(0|1) N ADDR_FILE [LIB_SUBSTRING]
 */
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dwarf/symbolize.h"

struct pick {
	const char *want;
	uint64_t base, text_lo, text_hi;
	char path[4096];
};

static int find_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct pick *p = arg;

	(void)size;
	if (!info->dlpi_name || !strstr(info->dlpi_name, p->want))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			p->base = info->dlpi_addr;
			p->text_lo = ph->p_vaddr;
			p->text_hi = ph->p_vaddr + ph->p_filesz;
			snprintf(p->path, sizeof(p->path), "%s", info->dlpi_name);
			return 1;
		}
	}
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv)
{
	struct pick p = {.want = argc > 4 ? argv[4] : "libc.so"};
	struct sym_frame f[SYM_MAX_INLINE];
	uint64_t *addrs, x = 88172645463325252ULL, t0, t1;
	size_t n, named = 0;
	struct symbolizer *s;
	FILE *out;

	if (argc < 4) {
		fprintf(stderr, "usage: symbench LINES(0|1) N ADDR_FILE [LIB]\n");
		return 2;
	}
	n = strtoull(argv[2], NULL, 0);
	if (!dl_iterate_phdr(find_lib, &p)) {
		fprintf(stderr, "symbench: no mapped library matching '%s'\n", p.want);
		return 1;
	}
	addrs = malloc(n * sizeof(*addrs));
	out = fopen(argv[3], "w");
	if (!addrs || !out) {
		perror("symbench");
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		addrs[i] = p.text_lo + x % (p.text_hi - p.text_lo);
		fprintf(out, "0x%llx\n", (unsigned long long)addrs[i]);
	}
	if (fclose(out)) {
		perror("symbench: write");
		return 1;
	}
	s = symbolizer__new(argv[1][0] == '1');
	if (!s || symbolizer__add_pid(s, getpid()) < 0) {
		fprintf(stderr, "symbench: symbolizer setup failed\n");
		return 1;
	}
	t0 = now_ns();
	for (size_t i = 0; i < n; i++) {
		int k = symbolizer__resolve(s, getpid(), p.base + addrs[i], f, SYM_MAX_INLINE);

		if (k > 0 && f[k - 1].func)
			named++;
	}
	t1 = now_ns();
	printf("lib %s addrs %zu named %zu ns_total %llu ns_per_addr %.1f\n", p.path, n, named,
	       (unsigned long long)(t1 - t0), (double)(t1 - t0) / (double)n);
	symbolizer__free(s);
	free(addrs);
	return 0;
}
