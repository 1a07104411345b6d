/* SPDX-License-Identifier: GPL-2.0 */
/*
 * child_report.h - for the tests that start an interpreter as a child and
 * read what it reports about itself on a pipe, up to its "READY" line.
 */
#ifndef LP_TESTS_UNIT_CHILD_REPORT_H
#define LP_TESTS_UNIT_CHILD_REPORT_H

#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

/*
 * Read @fd into @text (@cap bytes, kept NUL-terminated) until it holds a
 * "READY\n" line, the child closes the pipe, or 30 s pass without a byte.
 * Return: whether the READY line came.
 */
static bool read_until_ready(int fd, char *text, size_t cap)
{
	size_t len = 0;

	text[0] = '\0';
	while (len < cap - 1 && !strstr(text, "READY\n")) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 30000) <= 0)
			break;
		n = read(fd, text + len, cap - 1 - len);
		if (n <= 0)
			break;
		len += n;
		text[len] = '\0';
	}
	return strstr(text, "READY\n") != NULL;
}

#endif
