/* tls_proxy.c - a TLS front for a local server, for the remote specs: what
 * a hosted browser endpoint looks like (wss:// and https:// with a token).
 *
 * Usage: tls_proxy --cert PEM --key PEM --target PORT [--require HEADER]
 *                  [--port N]
 * Listens on 127.0.0.1 (port N, 0 or none for a free one; prints "port N"
 * on stderr), speaks TLS with the given certificate, reads each request's
 * head and, when --require "Name: value" is given and the head has no such
 * line (name case-insensitive, value exact), answers 401 and closes.
 * Otherwise it connects to 127.0.0.1:PORT, forwards the head unchanged and
 * then copies bytes both ways until either side closes: plain HTTP and
 * WebSocket upgrades alike. One child process per connection (they die
 * with the parent); runs until killed. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

static const char *require_hdr;

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int ssl_write_all(SSL *ssl, const char *p, size_t n)
{
	while (n > 0) {
		int k = SSL_write(ssl, p, (int)n);
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Does the head hold the required "Name: value" line? */
static int has_required(const char *head)
{
	const char *colon = strchr(require_hdr, ':');
	size_t nl = (size_t)(colon - require_hdr);
	const char *want = colon + 1, *line;
	while (*want == ' ')
		want++;
	for (line = strstr(head, "\r\n"); line != NULL; line = strstr(line, "\r\n")) {
		const char *v, *eol;
		line += 2;
		if (strncasecmp(line, require_hdr, nl) != 0 || line[nl] != ':')
			continue;
		v = line + nl + 1;
		while (*v == ' ')
			v++;
		eol = strstr(v, "\r\n");
		if (eol != NULL && (size_t)(eol - v) == strlen(want) && strncmp(v, want, strlen(want)) == 0)
			return 1;
	}
	return 0;
}

static void serve(SSL_CTX *ctx, int cfd, int target)
{
	char head[65536], buf[65536];
	size_t len = 0;
	SSL *ssl = SSL_new(ctx);
	struct sockaddr_in sa;
	int ufd;
	SSL_set_fd(ssl, cfd);
	if (SSL_accept(ssl) != 1)
		return;                               /* a client that refused our certificate */
	while (len < sizeof head - 1) {
		int n = SSL_read(ssl, head + len, (int)(sizeof head - 1 - len));
		if (n <= 0)
			return;
		len += (size_t)n;
		head[len] = '\0';
		if (strstr(head, "\r\n\r\n") != NULL)
			break;
	}
	if (require_hdr != NULL && !has_required(head)) {
		static const char no[] = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 13\r\n"
		                         "Connection: close\r\n\r\nunauthorized\n";
		ssl_write_all(ssl, no, sizeof no - 1);
		SSL_shutdown(ssl);
		return;
	}
	ufd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)target);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ufd < 0 || connect(ufd, (struct sockaddr *)&sa, sizeof sa) != 0)
		return;
	if (write_all(ufd, head, len) != 0)
		return;
	for (;;) {
		struct pollfd p[2];
		p[0].fd = cfd;
		p[0].events = POLLIN;
		p[1].fd = ufd;
		p[1].events = POLLIN;
		p[0].revents = p[1].revents = 0;
		if (SSL_pending(ssl) > 0)
			p[0].revents = POLLIN;
		else if (poll(p, 2, -1) < 0 && errno != EINTR)
			return;
		if (p[0].revents) {
			int n = SSL_read(ssl, buf, sizeof buf);
			if (n <= 0 || write_all(ufd, buf, (size_t)n) != 0)
				return;
		}
		if (p[1].revents) {
			ssize_t n = read(ufd, buf, sizeof buf);
			if (n <= 0 || ssl_write_all(ssl, buf, (size_t)n) != 0)
				return;
		}
	}
}

int main(int argc, char **argv)
{
	const char *cert = NULL, *key = NULL;
	int port = 0, target = 0, lfd, one = 1, i;
	struct sockaddr_in sa;
	socklen_t sl = sizeof sa;
	SSL_CTX *ctx;

	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--cert") == 0) cert = argv[i + 1];
		else if (strcmp(argv[i], "--key") == 0) key = argv[i + 1];
		else if (strcmp(argv[i], "--target") == 0) target = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--port") == 0) port = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--require") == 0) require_hdr = argv[i + 1];
	}
	if (cert == NULL || key == NULL || target <= 0
	    || (require_hdr != NULL && strchr(require_hdr, ':') == NULL)) {
		fprintf(stderr, "usage: tls_proxy --cert PEM --key PEM --target PORT "
		        "[--require 'Name: value'] [--port N]\n");
		return 2;
	}
	signal(SIGCHLD, SIG_IGN);                 /* children are reaped for us */
	signal(SIGPIPE, SIG_IGN);
	ctx = SSL_CTX_new(TLS_server_method());
	if (ctx == NULL || SSL_CTX_use_certificate_chain_file(ctx, cert) != 1
	    || SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		fprintf(stderr, "tls_proxy: cannot load the certificate or key\n");
		return 1;
	}
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 64) != 0
	    || getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0) {
		fprintf(stderr, "tls_proxy: cannot listen: %s\n", strerror(errno));
		return 1;
	}
	fprintf(stderr, "port %d\n", ntohs(sa.sin_port));
	fflush(stderr);
	for (;;) {
		int cfd = accept(lfd, NULL, NULL);
		pid_t pid;
		if (cfd < 0)
			continue;
		pid = fork();
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the proxy */
			close(lfd);
			serve(ctx, cfd, target);
			_exit(0);
		}
		close(cfd);
	}
}
