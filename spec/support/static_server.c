/* static_server.c - a small HTTP server for the integration specs.
 *
 * Serves files below --root on 127.0.0.1 (a free port with --port 0, printed
 * as "port N"). One process per connection (forked, auto-reaped) so that a
 * browser's idle pre-connections never block others. GET only; no paths
 * with "..". Query strings are ignored except ?delay=MS, which waits
 * before answering. */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *root = ".";

static const char *mime(const char *path)
{
	const char *dot = strrchr(path, '.');
	if (dot == NULL) return "application/octet-stream";
	if (strcmp(dot, ".html") == 0) return "text/html; charset=utf-8";
	if (strcmp(dot, ".js") == 0) return "text/javascript; charset=utf-8";
	if (strcmp(dot, ".json") == 0) return "application/json";
	if (strcmp(dot, ".css") == 0) return "text/css";
	return "text/plain; charset=utf-8";
}

static void reply(int fd, int status, const char *type, const char *body, size_t len)
{
	char head[512];
	int n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
	                 "Content-Length: %zu\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
	                 status, status == 200 ? "OK" : "Error", type, len);
	if (write(fd, head, (size_t)n) < 0) return;
	while (len > 0) {
		ssize_t w = write(fd, body, len);
		if (w <= 0) return;
		body += w;
		len -= (size_t)w;
	}
}

static void serve(int fd)
{
	char req[8192], path[4096], full[8192];
	ssize_t n = 0, r;
	char *q, *sp;
	struct stat st;
	alarm(10);
	while (n < (ssize_t)sizeof req - 1 && (r = read(fd, req + n, sizeof req - 1 - (size_t)n)) > 0) {
		n += r;
		req[n] = '\0';
		if (strstr(req, "\r\n\r\n")) break;
	}
	if (n <= 0) return;
	req[n] = '\0';
	/* 10 s for the request (a browser's idle pre-connection ends there);
	 * the answer gets longer: a 50 MB body to a browser on a loaded
	 * machine (a second make test beside) took more than 10 s */
	alarm(300);
	if (strncmp(req, "GET ", 4) != 0) {
		reply(fd, 405, "text/plain", "GET only\n", 9);
		return;
	}
	sp = strchr(req + 4, ' ');
	if (sp == NULL || (size_t)(sp - (req + 4)) >= sizeof path) return;
	memcpy(path, req + 4, (size_t)(sp - (req + 4)));
	path[sp - (req + 4)] = '\0';
	q = strchr(path, '?');
	if (q != NULL) {
		char *d = strstr(q, "delay=");
		*q = '\0';
		if (d != NULL) usleep((useconds_t)atoi(d + 6) * 1000);
	}
	if (strstr(path, "..") != NULL) {
		reply(fd, 403, "text/plain", "no\n", 3);
		return;
	}
	if (strcmp(path, "/") == 0) strcpy(path, "/index.html");
	snprintf(full, sizeof full, "%s%s", root, path);
	if (stat(full, &st) != 0 || !S_ISREG(st.st_mode)) {
		reply(fd, 404, "text/plain", "not found\n", 10);
		return;
	}
	{
		int f = open(full, O_RDONLY);
		char *buf = malloc((size_t)st.st_size + 1);
		if (f < 0 || buf == NULL || read(f, buf, (size_t)st.st_size) != st.st_size) {
			reply(fd, 500, "text/plain", "read error\n", 11);
		} else {
			reply(fd, 200, mime(full), buf, (size_t)st.st_size);
		}
		free(buf);
		if (f >= 0) close(f);
	}
}

int main(int argc, char **argv)
{
	int port = 0, i, s, one = 1;
	struct sockaddr_in a;
	socklen_t alen = sizeof a;
	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--port") == 0) port = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--root") == 0) root = argv[i + 1];
	}
	signal(SIGCHLD, SIG_IGN);           /* children are reaped for us */
	s = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 64) != 0) {
		perror("bind");
		return 1;
	}
	getsockname(s, (struct sockaddr *)&a, &alen);
	printf("port %d\n", ntohs(a.sin_port));
	fflush(stdout);
	for (;;) {
		int c = accept(s, NULL, NULL);
		pid_t pid;
		if (c < 0) {
			if (errno == EINTR) continue;
			return 1;
		}
		pid = fork();
		if (pid == 0) {
			close(s);
			serve(c);
			close(c);
			_exit(0);
		}
		close(c);
	}
}
