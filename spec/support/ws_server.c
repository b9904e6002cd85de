/* ws_server.c - a local WebSocket and HTTP server for the transport specs.
 *
 * Usage: ws_server --port N   (0 picks a free port; prints "port N" on
 * stdout). Listens on 127.0.0.1 only, runs until killed.
 *
 * HTTP: GET /json/version answers a JSON body with webSocketDebuggerUrl;
 * GET /size/N answers N bytes of 'x' (Content-Length); /chunked/N the same
 * with Transfer-Encoding: chunked. Any request carrying an Origin header,
 * plain or WebSocket upgrade, gets 403 (as Chromium does), so a client that
 * connects proves it sent none. An upgrade to /reject/S is refused with
 * HTTP status S.
 *
 * WebSocket: a message that starts with {"cmd": is a command, anything else
 * (of any size, fragmented or not) is echoed back as one frame.
 *   {"cmd":"fragmented","size":N,"frag":K}  one message of N bytes sent in
 *                                           K-byte fragments
 *   {"cmd":"big","size":N}                  one message of N bytes, one frame
 *   {"cmd":"burst","count":N}               N messages "1".."N" at once
 *   {"cmd":"last"}                          {"len":L,"frames":F,"sum":S} of
 *                                           the previous message
 *   {"cmd":"hello"}                         {"host":"<Host header>","origin":0|1}
 *   {"cmd":"close"}                         close frame (code 1000), then close
 *   {"cmd":"drop"}                          drop the TCP connection, no close frame
 *   {"cmd":"silent"}                        nothing
 *   {"cmd":"stall","ms":N}                  stop reading from the client for N ms
 *   {"cmd":"closes"}                        {"count":N,"code":C}: close frames
 *                                           clients sent so far, the last code
 *   {"cmd":"header","len":N,"body":K}       the head of a binary frame declaring
 *                                           N payload bytes (N up to 2^64 - 1,
 *                                           in the 8-byte form), then K of
 *                                           them (0-3, default 3), then
 *                                           nothing: written to the socket as
 *                                           it is, past lws, which would not
 *                                           write such a length
 * Payload bytes of big and fragmented messages: byte i is 'a' + i % 26.
 * sum is the byte sum mod 2^32. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libwebsockets.h>

/* One queued outgoing message. */
typedef struct job {
	struct job *next;
	unsigned char *buf;     /* owned; LWS_PRE bytes of headroom, then payload */
	size_t len, off;        /* payload bytes, bytes written */
	size_t frag;            /* bytes per fragment (0: one frame) */
	int kind;               /* JOB_MSG, JOB_CLOSE, JOB_DROP */
} job;

enum { JOB_MSG, JOB_CLOSE, JOB_DROP };

typedef struct {
	/* websocket */
	unsigned char *rx;      /* owned; the message being received */
	size_t rx_len, rx_cap;
	size_t frames;          /* frames of the message being received */
	size_t last_len, last_frames;
	uint32_t last_sum;
	job *head, *tail;       /* owned queue */
	char host[128];
	int origin;
	/* http */
	size_t body_left;
	int body_kind;          /* 1 json, 2 x's, 3 chunked x's */
	char body[512];
} pss_t;

static int port_arg;
static int close_frames, close_code;     /* close frames received from clients */

static void push_job(pss_t *s, job *j)
{
	if (s->tail)
		s->tail->next = j;
	else
		s->head = j;
	s->tail = j;
}

static job *new_job(size_t len, int kind)
{
	job *j = calloc(1, sizeof *j);
	if (j == NULL)
		return NULL;
	j->buf = malloc(LWS_PRE + len + 1);
	if (j->buf == NULL) {
		free(j);
		return NULL;
	}
	j->len = len;
	j->kind = kind;
	return j;
}

static void free_jobs(pss_t *s)
{
	while (s->head) {
		job *j = s->head;
		s->head = j->next;
		free(j->buf);
		free(j);
	}
	s->tail = NULL;
}

static void queue_text(struct lws *wsi, pss_t *s, const char *text, size_t len, size_t frag)
{
	job *j = new_job(len, JOB_MSG);
	if (j == NULL)
		return;
	memcpy(j->buf + LWS_PRE, text, len);
	j->frag = frag;
	push_job(s, j);
	lws_callback_on_writable(wsi);
}

static void queue_pattern(struct lws *wsi, pss_t *s, size_t len, size_t frag)
{
	job *j = new_job(len, JOB_MSG);
	size_t i;
	if (j == NULL)
		return;
	for (i = 0; i < len; i++)
		j->buf[LWS_PRE + i] = (unsigned char)('a' + i % 26);
	j->frag = frag;
	push_job(s, j);
	lws_callback_on_writable(wsi);
}

static long num_field(const char *msg, const char *name, long def)
{
	char key[64];
	const char *p;
	snprintf(key, sizeof key, "\"%s\":", name);
	p = strstr(msg, key);
	return p ? strtol(p + strlen(key), NULL, 10) : def;
}

static void command(struct lws *wsi, pss_t *s, char *msg, size_t len);

/* {"cmd":"header","len":N,"body":K}: a frame head no lws would write (a
 * length up to 2^64 - 1), and K bytes of its payload, straight to the
 * socket. Nothing else is queued on this connection then, so the bytes go
 * out in order. */
static void raw_header(struct lws *wsi, const char *msg)
{
	unsigned char b[13];
	unsigned long long n = 0;
	const char *p = strstr(msg, "\"len\":");
	long body = num_field(msg, "body", 3);
	ssize_t w;
	int i;
	if (p != NULL)
		n = strtoull(p + 6, NULL, 10);
	if (body < 0 || body > 3)
		body = 3;
	b[0] = 0x82;                        /* FIN, binary */
	b[1] = 127;                         /* unmasked, 8-byte length */
	for (i = 0; i < 8; i++)
		b[2 + i] = (unsigned char)(n >> (56 - 8 * i));
	memcpy(b + 10, "abc", 3);
	w = write(lws_get_socket_fd(wsi), b, 10 + (size_t)body);
	(void)w;                            /* a client gone: nothing to tell */
}

static void on_message(struct lws *wsi, pss_t *s)
{
	char *msg = (char *)s->rx;
	size_t len = s->rx_len, i;
	uint32_t sum = 0;
	for (i = 0; i < len; i++)
		sum += s->rx[i];
	if (len < 7 || memcmp(msg, "{\"cmd\":", 7) != 0)
		queue_text(wsi, s, msg, len, 0);
	else
		command(wsi, s, msg, len);
	s->last_len = len;
	s->last_frames = s->frames;
	s->last_sum = sum;
	s->frames = 0;
}

static void command(struct lws *wsi, pss_t *s, char *msg, size_t len)
{
	char reply[512];
	msg[len] = '\0';                     /* rx has a spare byte */
	if (strstr(msg, "\"fragmented\"")) {
		queue_pattern(wsi, s, (size_t)num_field(msg, "size", 0),
		              (size_t)num_field(msg, "frag", 1));
	} else if (strstr(msg, "\"big\"")) {
		queue_pattern(wsi, s, (size_t)num_field(msg, "size", 0), 0);
	} else if (strstr(msg, "\"burst\"")) {
		long n = num_field(msg, "count", 1), k;
		for (k = 1; k <= n; k++) {
			int m = snprintf(reply, sizeof reply, "%ld", k);
			queue_text(wsi, s, reply, (size_t)m, 0);
		}
	} else if (strstr(msg, "\"last\"")) {
		int m = snprintf(reply, sizeof reply, "{\"len\":%zu,\"frames\":%zu,\"sum\":%u}",
		                 s->last_len, s->last_frames, (unsigned)s->last_sum);
		queue_text(wsi, s, reply, (size_t)m, 0);
	} else if (strstr(msg, "\"hello\"")) {
		int m = snprintf(reply, sizeof reply, "{\"host\":\"%s\",\"origin\":%d}",
		                 s->host, s->origin);
		queue_text(wsi, s, reply, (size_t)m, 0);
	} else if (strstr(msg, "\"close\"")) {
		job *j = new_job(0, JOB_CLOSE);
		if (j) {
			push_job(s, j);
			lws_callback_on_writable(wsi);
		}
	} else if (strstr(msg, "\"drop\"")) {
		job *j = new_job(0, JOB_DROP);
		if (j) {
			push_job(s, j);
			lws_callback_on_writable(wsi);
		}
	} else if (strstr(msg, "\"stall\"")) {
		lws_rx_flow_control(wsi, 0);
		lws_set_timer_usecs(wsi, (lws_usec_t)num_field(msg, "ms", 100) * 1000);
	} else if (strstr(msg, "\"closes\"")) {
		int m = snprintf(reply, sizeof reply, "{\"count\":%d,\"code\":%d}",
		                 close_frames, close_code);
		queue_text(wsi, s, reply, (size_t)m, 0);
	} else if (strstr(msg, "\"header\"")) {
		raw_header(wsi, msg);
	} else if (strstr(msg, "\"silent\"")) {
		/* nothing */
	} else {
		queue_text(wsi, s, msg, len, 0);
	}
}

static int write_job(struct lws *wsi, pss_t *s)
{
	job *j = s->head;
	size_t chunk;
	int flags;
	if (j == NULL)
		return 0;
	if (j->kind == JOB_CLOSE) {
		lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, (unsigned char *)"bye", 3);
		return -1;
	}
	if (j->kind == JOB_DROP) {
		shutdown(lws_get_socket_fd(wsi), SHUT_RDWR);
		return -1;
	}
	chunk = j->len - j->off;
	if (j->frag > 0 && chunk > j->frag)
		chunk = j->frag;
	flags = lws_write_ws_flags(LWS_WRITE_TEXT, j->off == 0, j->off + chunk == j->len);
	if (lws_write(wsi, j->buf + LWS_PRE + j->off, chunk, (enum lws_write_protocol)flags) < 0)
		return -1;
	j->off += chunk;
	if (j->off == j->len) {
		s->head = j->next;
		if (s->head == NULL)
			s->tail = NULL;
		free(j->buf);
		free(j);
	}
	if (s->head)
		lws_callback_on_writable(wsi);
	return 0;
}

static int http_reply(struct lws *wsi, pss_t *s, unsigned status, const char *type, size_t len)
{
	unsigned char buf[LWS_PRE + 1024], *start = buf + LWS_PRE, *p = start,
		*end = buf + sizeof buf - 1;
	if (s->body_kind == 3) {
		if (lws_add_http_common_headers(wsi, status, type, LWS_ILLEGAL_HTTP_CONTENT_LEN, &p, end)
		    || lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING,
		                                    (const unsigned char *)"chunked", 7, &p, end))
			return 1;
	} else if (lws_add_http_common_headers(wsi, status, type, len, &p, end)) {
		return 1;
	}
	if (lws_finalize_write_http_header(wsi, start, &p, end))
		return 1;
	s->body_left = len;
	lws_callback_on_writable(wsi);
	return 0;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
                    void *in, size_t len)
{
	pss_t *s = (pss_t *)user;
	switch (reason) {
	case LWS_CALLBACK_HTTP: {
		const char *uri = (const char *)in;
		if (lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN) > 0) {
			lws_return_http_status(wsi, 403, "Rejected a request with an Origin header");
			return -1;
		}
		if (strcmp(uri, "/json/version") == 0) {
			int m = snprintf(s->body, sizeof s->body,
				"{\"Browser\":\"ws_server/1.0\",\"Protocol-Version\":\"1.3\","
				"\"webSocketDebuggerUrl\":\"ws://127.0.0.1:%d/devtools/browser/test\"}",
				port_arg);
			s->body_kind = 1;
			return http_reply(wsi, s, 200, "application/json", (size_t)m);
		}
		if (strncmp(uri, "/chunked/", 9) == 0) {
			/* N bytes of 'x' in chunks of up to 1000 bytes, framed here */
			s->body_kind = 3;
			return http_reply(wsi, s, 200, "text/plain", strtoul(uri + 9, NULL, 10));
		}
		if (strncmp(uri, "/size/", 6) == 0) {
			s->body_kind = 2;
			return http_reply(wsi, s, 200, "text/plain", strtoul(uri + 6, NULL, 10));
		}
		lws_return_http_status(wsi, 404, NULL);
		return -1;
	}
	case LWS_CALLBACK_HTTP_WRITEABLE: {
		static unsigned char buf[LWS_PRE + 65536];
		unsigned char *p = buf + LWS_PRE;
		size_t n, k;
		if (s->body_kind == 0)
			return 0;
		if (s->body_kind == 1) {                /* the JSON, at once */
			n = strlen(s->body);
			memcpy(p, s->body, n);
			s->body_left = 0;
		} else if (s->body_kind == 2) {         /* x's, 64 KiB at a time */
			n = s->body_left < 65536 ? s->body_left : 65536;
			memset(p, 'x', n);
			s->body_left -= n;
		} else {                                /* one chunk of up to 1000 x's */
			k = s->body_left < 1000 ? s->body_left : 1000;
			n = (size_t)sprintf((char *)p, "%zx\r\n", k);
			memset(p + n, 'x', k);
			n += k;
			s->body_left -= k;
			n += (size_t)sprintf((char *)p + n, "\r\n%s", s->body_left ? "" : "0\r\n\r\n");
		}
		if (lws_write(wsi, p, n, s->body_left ? LWS_WRITE_HTTP : LWS_WRITE_HTTP_FINAL) != (int)n)
			return 1;
		if (s->body_left) {
			lws_callback_on_writable(wsi);
			return 0;
		}
		s->body_kind = 0;
		if (lws_http_transaction_completed(wsi))
			return -1;
		return 0;
	}
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: {
		char uri[256];
		if (lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN) > 0) {
			lws_return_http_status(wsi, 403,
				"Rejected an incoming WebSocket connection with an Origin header");
			return 1;
		}
		if (lws_hdr_copy(wsi, uri, sizeof uri, WSI_TOKEN_GET_URI) > 0
		    && strncmp(uri, "/reject/", 8) == 0) {
			lws_return_http_status(wsi, (unsigned)atoi(uri + 8), "rejected");
			return 1;
		}
		return 0;
	}
	case LWS_CALLBACK_ESTABLISHED:
		memset(s, 0, sizeof *s);
		if (lws_hdr_copy(wsi, s->host, sizeof s->host, WSI_TOKEN_HOST) < 0)
			s->host[0] = '\0';
		s->origin = lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN) > 0;
		break;
	case LWS_CALLBACK_RECEIVE: {
		size_t more = lws_remaining_packet_payload(wsi);
		if (s->rx_len + len + more + 1 > s->rx_cap) {
			size_t cap = s->rx_cap ? s->rx_cap : 4096;
			unsigned char *p;
			while (cap < s->rx_len + len + more + 1)
				cap *= 2;
			p = realloc(s->rx, cap);
			if (p == NULL)
				return -1;
			s->rx = p;
			s->rx_cap = cap;
		}
		memcpy(s->rx + s->rx_len, in, len);
		s->rx_len += len;
		if (more == 0)
			s->frames++;
		if (lws_is_final_fragment(wsi) && more == 0) {
			on_message(wsi, s);
			s->rx_len = 0;
			if (s->rx_cap > ((size_t)4 << 20)) {
				free(s->rx);
				s->rx = NULL;
				s->rx_cap = 0;
			}
		}
		break;
	}
	case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE: {
		const unsigned char *c = (const unsigned char *)in;
		close_frames++;
		close_code = len >= 2 ? (c[0] << 8 | c[1]) : 0;
		break;
	}
	case LWS_CALLBACK_TIMER:                /* the end of a stall */
		lws_rx_flow_control(wsi, 1);
		break;
	case LWS_CALLBACK_SERVER_WRITEABLE:
		return write_job(wsi, s);
	case LWS_CALLBACK_CLOSED:
		free_jobs(s);
		free(s->rx);
		s->rx = NULL;
		break;
	default:
		break;
	}
	return 0;
}

static const struct lws_protocols protocols[] = {
	{"test", callback, sizeof(pss_t), 65536, 0, NULL, (size_t)1 << 20},
	{NULL, NULL, 0, 0, 0, NULL, 0}
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct lws_context_creation_info info;
	struct lws_context *ctx;
	struct lws_vhost *vh;
	int i;
	for (i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--port") == 0)
			port_arg = atoi(argv[i + 1]);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	lws_set_log_level(0, NULL);
	memset(&info, 0, sizeof info);
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
	info.gid = -1;
	info.uid = -1;
	ctx = lws_create_context(&info);
	if (ctx == NULL) {
		fprintf(stderr, "ws_server: cannot create the context\n");
		return 1;
	}
	info.port = port_arg;
	info.iface = "127.0.0.1";
	info.protocols = protocols;
	vh = lws_create_vhost(ctx, &info);
	if (vh == NULL) {
		fprintf(stderr, "ws_server: cannot listen on 127.0.0.1:%d\n", port_arg);
		lws_context_destroy(ctx);
		return 1;
	}
	port_arg = lws_get_vhost_listen_port(vh);
	printf("port %d\n", port_arg);
	fflush(stdout);
	while (!stop && lws_service(ctx, 0) >= 0)
		;
	lws_context_destroy(ctx);
	return 0;
}
