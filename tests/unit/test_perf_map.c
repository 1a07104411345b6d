// SPDX-License-Identifier: GPL-2.0
/*
 * test_perf_map.c - dwarf/perf_map.c on maps this test writes for its own
 * pid: the line written last wins, malformed lines are skipped, a long
 * name is cut, lines appended later are found, and a file that is a
 * symbolic link or someone else's is not believed.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dwarf/perf_map.h"
#include "unit.h"

static char path[64];

static void write_map(const char *mode, const char *text)
{
	FILE *f = fopen(path, mode);

	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

static const char *lookup_fresh(uint64_t addr)
{
	static struct perf_map *pm;

	perf_map__free(pm);
	pm = perf_map__new((int)getpid());
	return pm ? perf_map__lookup(pm, addr) : NULL;
}

UNIT_TEST(perf_map_lines_and_reuse)
{
	char text[1024], longname[400];

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	snprintf(text, sizeof(text),
		 "1000 100 first\n"
		 "garbage line\n"
		 "2000 0 empty_size\n"
		 "ffffffffffffff00 1000 wraps\n"
		 "3000 10\n"
		 "1080 40 later_over_first\n"
		 "4000 20 %s\r\n"
		 "5000 10 no_newline_yet",
		 longname);
	write_map("w", text);
	CHECK_STR(lookup_fresh(0x1000), "first");
	CHECK_STR(lookup_fresh(0x10bf), "later_over_first");
	CHECK_STR(lookup_fresh(0x10ff), "first");
	CHECK_STR(lookup_fresh(0x1080), "later_over_first");
	CHECK(lookup_fresh(0x10c0) && !strcmp(lookup_fresh(0x10c0), "first"));
	CHECK(lookup_fresh(0x2000) == NULL);
	CHECK(lookup_fresh(0x3005) == NULL);
	CHECK(lookup_fresh(0xffffffffffffff10ull) == NULL);
	CHECK_EQ_INT(strlen(lookup_fresh(0x4000)), 255);
	/* an incomplete last line is not read until it ends */
	CHECK(lookup_fresh(0x5000) == NULL);
	unlink(path);
}

UNIT_TEST(perf_map_appended_lines_found)
{
	struct perf_map *pm = perf_map__new((int)getpid());
	struct timespec wait = {.tv_nsec = 120 * 1000000};

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	write_map("w", "1000 10 one\n");
	CHECK_STR(perf_map__lookup(pm, 0x1000), "one");
	write_map("a", "2000 10 two\n");
	nanosleep(&wait, NULL); /* reads are at most every 100 ms */
	CHECK_STR(perf_map__lookup(pm, 0x2004), "two");
	CHECK_STR(perf_map__lookup(pm, 0x1004), "one");
	perf_map__free(pm);
	unlink(path);
}

/* A name found is not read again by lookups; a refresh sees the JIT's
 * later line for the same address, and says so by its version. */
UNIT_TEST(perf_map_refresh_sees_reuse)
{
	struct perf_map *pm = perf_map__new((int)getpid());
	struct timespec wait = {.tv_nsec = 120 * 1000000};
	uint64_t v;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	write_map("w", "1000 10 one\n");
	CHECK_STR(perf_map__lookup(pm, 0x1000), "one");
	v = perf_map__version(pm);
	write_map("a", "1000 10 uno\n");
	nanosleep(&wait, NULL);
	CHECK_STR(perf_map__lookup(pm, 0x1000), "one");
	CHECK(perf_map__version(pm) == v);
	CHECK(perf_map__refresh(pm) != v);
	CHECK_STR(perf_map__lookup(pm, 0x1000), "uno");
	v = perf_map__version(pm);
	nanosleep(&wait, NULL);
	CHECK(perf_map__refresh(pm) == v); /* nothing new */
	perf_map__free(pm);
	unlink(path);
}

UNIT_TEST(perf_map_line_longer_than_a_read)
{
	struct perf_map *pm = perf_map__new((int)getpid());
	struct timespec wait = {.tv_nsec = 50 * 1000000};
	const char *name = NULL;
	static char junk[1 << 20];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	memset(junk, 'x', sizeof(junk));
	for (int i = 0; i < 65; i++) /* 65 MiB without a newline, then a line */
		fwrite(junk, 1, sizeof(junk), f);
	fputs("\n1000 10 after_the_junk\n", f);
	fclose(f);
	/* the junk is stepped over, read by read; each read is paid for by a
	 * wait of 20 times its length */
	for (int i = 0; i < 100 && !name; i++) {
		name = perf_map__lookup(pm, 0x1000);
		if (!name)
			nanosleep(&wait, NULL);
	}
	CHECK_STR(name, "after_the_junk");
	perf_map__free(pm);
	unlink(path);
}

UNIT_TEST(perf_map_not_believed)
{
	char target[64];

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	snprintf(target, sizeof(target), "/tmp/perf-%d.map.real", (int)getpid());
	/* a symbolic link: whatever it points at is not read */
	{
		FILE *f = fopen(target, "w");

		CHECK(f != NULL);
		if (f) {
			fputs("1000 10 through_a_link\n", f);
			fclose(f);
		}
	}
	unlink(path);
	CHECK(symlink(target, path) == 0);
	CHECK(lookup_fresh(0x1000) == NULL);
	unlink(path);
	unlink(target);
	/* a file of another user (this test runs as root or as the owner) */
	write_map("w", "1000 10 someone_elses\n");
	CHECK_STR(lookup_fresh(0x1000), "someone_elses");
	if (chown(path, 65534, 65534) == 0 && getuid() != 65534)
		CHECK(lookup_fresh(0x1000) == NULL);
	unlink(path);
	/* no file at all */
	CHECK(lookup_fresh(0x1000) == NULL);
}

UNIT_MAIN()
