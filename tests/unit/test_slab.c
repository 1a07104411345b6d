// SPDX-License-Identifier: GPL-2.0
/*
 * test_slab.c - the blocks stacks are kept in (user/util/slab.c): sizes,
 * recycling by size, and pages that need no fault when first written.
 */
#include <stdint.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include "unit.h"
#include "user/util/slab.h"

UNIT_TEST(slab_sizes_and_reuse)
{
	struct lp_slab *s = lp_slab__new();
	char *a, *b, *c, *d, *big;

	CHECK(s != NULL);
	if (!s)
		return;
	a = lp_slab__alloc(s, 100);
	b = lp_slab__alloc(s, 200);
	CHECK(a && b && a != b);
	CHECK(((uintptr_t)a & 15) == 0 && ((uintptr_t)b & 15) == 0);
	memset(a, 1, 100);
	memset(b, 2, 200);
	CHECK(a[99] == 1 && b[0] == 2); /* no overlap */
	lp_slab__free(s, a, 100);
	c = lp_slab__alloc(s, 200); /* another size: not a's block */
	CHECK(c != a);
	d = lp_slab__alloc(s, 97);
#if !defined(__SANITIZE_ADDRESS__) /* blocks come from malloc() under ASan */
	CHECK(d == a);		   /* the same size once rounded */
#endif
	big = lp_slab__alloc(s, 1 << 20); /* past the slab's sizes */
	CHECK(big != NULL);
	if (big)
		big[(1 << 20) - 1] = 3;
	lp_slab__free(s, big, 1 << 20);
	lp_slab__free(s, NULL, 10);
	lp_slab__free(s, b, 200);
	lp_slab__free(s, c, 200);
	lp_slab__free(s, d, 97);
	lp_slab__delete(s);
}

/* Page faults the calling thread takes (the kernel's own, for
 * MAP_POPULATE, are not counted), or -1 if they cannot be counted. */
static int open_faults(void)
{
	struct perf_event_attr pe = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(pe),
		.config = PERF_COUNT_SW_PAGE_FAULTS,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};

	return (int)syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0);
}

/*
 * Blocks come from chunks whose pages are in already: writing 256 KB of
 * new blocks takes no page fault (malloc() takes one per page).
 */
UNIT_TEST(slab_blocks_need_no_fault)
{
	struct lp_slab *s = lp_slab__new();
	char *blocks[1000];
	long long faults = -1;
	int fd = open_faults();

	CHECK(s != NULL);
	if (!s || fd < 0) {
		fprintf(stderr, "  (page faults cannot be counted here: skipped)\n");
		lp_slab__delete(s);
		if (fd >= 0)
			close(fd);
		return;
	}
	blocks[0] = lp_slab__alloc(s, 256); /* maps the first chunk */
	ioctl(fd, PERF_EVENT_IOC_RESET, 0);
	for (int i = 1; i < 1000; i++)
		blocks[i] = lp_slab__alloc(s, 256);
	for (int i = 0; i < 1000; i++)
		if (blocks[i])
			memset(blocks[i], i, 256);
	if (read(fd, &faults, sizeof(faults)) != sizeof(faults))
		faults = -1;
	close(fd);
#if defined(__SANITIZE_ADDRESS__)
	(void)faults; /* blocks come from malloc() under ASan */
#else
	CHECK(faults >= 0 && faults < 4);
#endif
	for (int i = 0; i < 1000; i++)
		lp_slab__free(s, blocks[i], 256);
	lp_slab__delete(s);
}

UNIT_MAIN()
