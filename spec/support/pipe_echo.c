/* pipe_echo.c - the far end of a CDP-style pipe for the transport specs.
 *
 * Reads NUL-terminated messages from fd 3 and answers on fd 4:
 *   "!big N"     -> one message of N bytes ('x')
 *   "!split"     -> "split-message" written one byte at a time, slowly
 *   "!two"       -> two messages in one write
 *   "!exit"      -> exits at once (the pipe closes)
 *   "!stall MS"  -> stops reading for MS milliseconds (so that our writes queue)
 *   anything else -> echoed back */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(4, p, n);
		if (w <= 0) exit(1);
		p += w;
		n -= (size_t)w;
	}
}

static void answer(const char *m, size_t len)
{
	if (len >= 5 && strncmp(m, "!big ", 5) == 0) {
		size_t n = (size_t)strtoull(m + 5, NULL, 10);
		char *b = malloc(n + 1);
		if (b == NULL) exit(1);
		memset(b, 'x', n);
		b[n] = '\0';
		put(b, n + 1);
		free(b);
	} else if (len == 6 && memcmp(m, "!split", 6) == 0) {
		const char *s = "split-message";
		size_t i;
		for (i = 0; i <= strlen(s); i++) {
			put(s + i, 1);
			usleep(2000);
		}
	} else if (len == 4 && memcmp(m, "!two", 4) == 0) {
		put("one\0two", 8);
	} else if (len >= 7 && strncmp(m, "!stall ", 7) == 0) {
		usleep((useconds_t)strtoul(m + 7, NULL, 10) * 1000);
	} else if (len == 5 && memcmp(m, "!exit", 5) == 0) {
		exit(0);
	} else {
		put(m, len);
		put("", 1);
	}
}

int main(void)
{
	size_t cap = 1 << 16, len = 0, start = 0, scan = 0;  /* scan: no NUL before it */
	char *buf = malloc(cap);
	for (;;) {
		ssize_t n;
		char *nul;
		if (len == cap) {
			if (start > 0) {
				memmove(buf, buf + start, len - start);
				len -= start;
				scan -= start;
				start = 0;
			} else {
				cap *= 2;
				buf = realloc(buf, cap);
				if (buf == NULL) return 1;
			}
		}
		n = read(3, buf + len, cap - len);
		if (n <= 0) return 0;
		len += (size_t)n;
		while ((nul = memchr(buf + scan, '\0', len - scan)) != NULL) {
			answer(buf + start, (size_t)(nul - (buf + start)));
			start = scan = (size_t)(nul - buf) + 1;
		}
		scan = len;
		if (start == len) start = len = scan = 0;
	}
}
