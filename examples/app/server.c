/* server.c - backend of the sample app (issue 5): an HTTP server on
 * libwebsockets that serves the front end in public/, a small JSON API over a
 * SQLite database rebuilt from seed.sql at every start, and the read-only
 * debug endpoint GET /api/debug/db-inspect that the page's developer tools
 * call.
 *
 * It must never listen beyond 127.0.0.1, never put request text into SQL
 * (table names come from a fixed allow-list, values are bound parameters),
 * never show users.password_hash, and never put SQL, paths or library
 * messages into an error reply (they go to the log on stderr). Money is
 * integer cents everywhere.
 *
 * One bug is planted here on purpose for the demo workflows (order_totals:
 * tax is charged on shipping too); README.md lists it and the others.
 */
#define _XOPEN_SOURCE 700

#include <libwebsockets.h>
#include <sqlite3.h>
#include <jansson.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#define MAX_BODY        (64 * 1024)        /* larger request bodies get 413 */
#define MAX_DRAIN       (16 * 1024 * 1024) /* up to this, a too-large body is read and dropped so the 413 arrives cleanly */
#define MAX_STATIC      (4 * 1024 * 1024)  /* largest file served from --root */
#define MAX_ORDER_LINES 50
#define INSPECT_DEFAULT_LIMIT 5
#define INSPECT_MAX_LIMIT     100

/* Shop pricing: flat shipping under the free-shipping threshold, tax in percent. */
#define SHIPPING_CENTS           599
#define FREE_SHIPPING_FROM_CENTS 7500
#define TAX_PERCENT              8

static struct {
	sqlite3 *rw;                 /* the app's connection; owned, closed in main */
	sqlite3 *ro;                 /* opened SQLITE_OPEN_READONLY, used by db-inspect only; owned */
	char root[PATH_MAX];         /* realpath of --root */
	int port;                    /* the port actually bound */
	struct lws_context *ctx;
} app;

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t serving;    /* app.ctx may be woken from the signal handler */

/* ------------------------------------------------------------------ */
/* Per-connection request state. lws allocates and zeroes it; the heap
 * buffers in it are ours and are freed by req_free on every path out. */

struct req {
	int method;                  /* LWSHUMETH_*, or -1 */
	char path[512];              /* decoded, normalised by lws */
	char query[512];             /* decoded args joined with '&', for the log */
	struct timespec t0;
	int waiting_body;            /* body announced, not all read yet */
	int too_large;               /* body over MAX_BODY: being drained */
	char *body;                  /* owned: request body, NUL-terminated */
	size_t body_len;
	int status;                  /* response status, 0 until chosen */
	const char *ctype;           /* static string */
	const char *allow;           /* Allow header for 405, static string */
	int api;                     /* API reply: Cache-Control no-store */
	char cookie[96];             /* Set-Cookie value, or "" */
	unsigned char *out;          /* owned: LWS_PRE headroom + body */
	size_t out_len, out_off;
	int headers_sent;
	int close_after;             /* close the connection after the reply */
};

static void req_free(struct req *r)
{
	free(r->body);               /* releases the request body */
	r->body = NULL;
	r->body_len = 0;
	free(r->out);                /* releases the response buffer */
	r->out = NULL;
	r->out_len = r->out_off = 0;
}

static const char *method_name(int m)
{
	static const char *const names[] = {
		"GET", "POST", "OPTIONS", "PUT", "PATCH", "DELETE", "CONNECT", "HEAD"
	};
	return m >= 0 && m < (int)(sizeof names / sizeof names[0]) ? names[m] : "?";
}

/* Writes s to f with control bytes escaped, so request text cannot forge log lines. */
static void log_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f || c == '\\')
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
}

static void log_request(const struct req *r)
{
	struct timespec t1;
	double ms;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - r->t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - r->t0.tv_nsec) / 1e6;
	fprintf(stderr, "%s ", method_name(r->method));
	log_text(stderr, r->path[0] ? r->path : "-");
	if (r->query[0]) {
		fputc('?', stderr);
		log_text(stderr, r->query);
	}
	fprintf(stderr, " %d %.1fms\n", r->status, ms);
}

/* ------------------------------------------------------------------ */
/* Replies. Each sets the status and takes ownership of the body bytes. */

static void reply_bytes(struct req *r, int status, const char *ctype, const char *body, size_t len)
{
	free(r->out);
	r->out = malloc(LWS_PRE + len + 1);          /* owned by r until req_free */
	if (!r->out) {
		status = 500;
		ctype = "application/json";
		body = "{\"error\":\"out of memory\"}";
		len = strlen(body);
		r->out = malloc(LWS_PRE + len + 1);
		if (!r->out) {
			r->out_len = 0;
			r->status = 500;
			r->close_after = 1;
			return;
		}
	}
	memcpy(r->out + LWS_PRE, body, len);
	r->out_len = len;
	r->out_off = 0;
	r->status = status;
	r->ctype = ctype;
}

/* Takes ownership of v (decref'd here). */
static void reply_json(struct req *r, int status, json_t *v)
{
	char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;   /* owned: freed below */

	json_decref(v);
	r->api = 1;
	if (!text) {
		reply_bytes(r, 500, "application/json", "{\"error\":\"internal error\"}", 26);
		return;
	}
	reply_bytes(r, status, "application/json", text, strlen(text));
	free(text);
}

/* msg must be a fixed text of ours: never request text, SQL or a library message. */
static void reply_error(struct req *r, int status, const char *msg)
{
	reply_json(r, status, json_pack("{s:s}", "error", msg));
}

static void reply_method_not_allowed(struct req *r, const char *allow)
{
	r->allow = allow;
	reply_error(r, 405, "method not allowed");
}

/* A database failure: the detail goes to the log, the client gets a plain 500. */
static void reply_db_error(struct req *r, sqlite3 *db, const char *what)
{
	fprintf(stderr, "app: database error in %s: %s\n", what, sqlite3_errmsg(db));
	reply_error(r, 500, "internal error");
}

/* ------------------------------------------------------------------ */
/* Query arguments, decoded by lws. */

#define MAX_ARGS 16
struct qargs {
	int n;
	int bad;                     /* too many or too long */
	char name[MAX_ARGS][64];
	char value[MAX_ARGS][256];
};

static void qargs_load(struct lws *wsi, struct qargs *q)
{
	char frag[64 + 256 + 2];
	int i;

	memset(q, 0, sizeof *q);
	for (i = 0; ; i++) {
		int len = lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, i);
		char *eq;

		if (len >= (int)sizeof frag) {
			q->bad = 1;
			return;
		}
		/* past the last one; an empty one ("a=1&&b=2") is skipped, not
		 * the end: what follows it is read too */
		if (lws_hdr_copy_fragment(wsi, frag, (int)sizeof frag, WSI_TOKEN_HTTP_URI_ARGS, i) < 0)
			break;
		if (frag[0] == '\0')
			continue;
		if (q->n == MAX_ARGS || i >= 64) {
			q->bad = 1;
			return;
		}
		eq = strchr(frag, '=');
		if (eq)
			*eq++ = '\0';
		else
			eq = frag + strlen(frag);
		if (strlen(frag) >= sizeof q->name[0] || strlen(eq) >= sizeof q->value[0]) {
			q->bad = 1;
			return;
		}
		strcpy(q->name[q->n], frag);
		strcpy(q->value[q->n], eq);
		q->n++;
	}
}

/* The value of argument name, or NULL. *dup is set when it appears twice. */
static const char *qarg(const struct qargs *q, const char *name, int *dup)
{
	const char *v = NULL;
	int i;

	for (i = 0; i < q->n; i++) {
		if (strcmp(q->name[i], name))
			continue;
		if (v)
			*dup = 1;
		else
			v = q->value[i];
	}
	return v;
}

/* A decimal integer of 1..9 digits without sign, or -1. */
static long long parse_uint(const char *s, const char **end)
{
	long long v = 0;
	int n = 0;

	while (s[n] >= '0' && s[n] <= '9' && n < 10)
		v = v * 10 + (s[n++] - '0');
	if (n == 0 || n > 9)
		return -1;
	if (end)
		*end = s + n;
	else if (s[n])
		return -1;
	return v;
}

/* The demo user: the demo_user cookie set by /api/session?user=N, else 1. */
static long long current_user(struct lws *wsi)
{
	char *buf, *p;
	long long id = 1;
	int len = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_COOKIE);

	/* the whole header, however long (other apps on localhost set cookies too) */
	if (len <= 0 || !(buf = malloc((size_t)len + 1)))
		return 1;
	if (lws_hdr_copy(wsi, buf, len + 1, WSI_TOKEN_HTTP_COOKIE) < 0) {
		free(buf);
		return 1;
	}
	/* "a=1; demo_user=2; b=3": find the name at the start or after "; " */
	for (p = buf; (p = strstr(p, "demo_user=")); p++) {
		if (p == buf || p[-1] == ' ' || p[-1] == ';') {
			const char *end;
			long long v = parse_uint(p + 10, &end);
			if (v > 0 && (*end == '\0' || *end == ';'))
				id = v;
			break;
		}
	}
	free(buf);
	return id;
}

/* ------------------------------------------------------------------ */
/* SQLite helpers. */

/* The current row as an object named by the columns. New reference. */
static json_t *row_object(sqlite3_stmt *st)
{
	json_t *o = json_object();
	int i, n = sqlite3_column_count(st);

	for (i = 0; o && i < n; i++) {
		json_t *v;

		switch (sqlite3_column_type(st, i)) {
		case SQLITE_INTEGER:
			v = json_integer((json_int_t)sqlite3_column_int64(st, i));
			break;
		case SQLITE_FLOAT:
			v = json_real(sqlite3_column_double(st, i));
			break;
		case SQLITE_TEXT:
			v = json_stringn((const char *)sqlite3_column_text(st, i),
			                 (size_t)sqlite3_column_bytes(st, i));
			if (!v)
				v = json_string("(invalid UTF-8)");
			break;
		case SQLITE_NULL:
			v = json_null();
			break;
		default:
			v = json_sprintf("(blob, %d bytes)", sqlite3_column_bytes(st, i));
			break;
		}
		if (!v || json_object_set_new(o, sqlite3_column_name(st, i), v)) {
			json_decref(o);
			o = NULL;
		}
	}
	return o;
}

/* Steps st to the end, appending each row as an object to a new array.
 * Returns the array (new reference) or NULL on a database error. Finalizes st. */
static json_t *collect_rows(sqlite3_stmt *st)
{
	json_t *rows = json_array();
	int rc = SQLITE_DONE;

	while (rows && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *o = row_object(st);
		if (!o || json_array_append_new(rows, o)) {
			json_decref(rows);
			rows = NULL;
		}
	}
	if (rows && rc != SQLITE_DONE) {
		json_decref(rows);
		rows = NULL;
	}
	sqlite3_finalize(st);
	return rows;
}

/* The first row of st as an object; *found says whether there was one.
 * NULL with *found = 1 means a database error. Finalizes st. */
static json_t *first_row(sqlite3_stmt *st, int *found)
{
	json_t *o = NULL;
	int rc = sqlite3_step(st);

	*found = rc == SQLITE_ROW;
	if (rc == SQLITE_ROW)
		o = row_object(st);
	else if (rc != SQLITE_DONE)
		*found = 1;
	sqlite3_finalize(st);
	return o;
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return NULL;
	}
	return st;
}

/* row_exists(sql, id): steps a "SELECT 1 ... WHERE id = ?1" on the
 * read-write connection: SQLITE_ROW (there), SQLITE_DONE (not there), or
 * another code (a database error, also when it cannot be prepared). */
static int row_exists(const char *sql, long long id)
{
	sqlite3_stmt *st = prepare(app.rw, sql);
	int rc;

	if (!st)
		return SQLITE_ERROR;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc;
}

/* ------------------------------------------------------------------ */
/* API: session and feature flags. */

static int csv_contains(const char *list, const char *word)
{
	size_t n = strlen(word);

	while (*list) {
		const char *comma = strchr(list, ',');
		size_t len = comma ? (size_t)(comma - list) : strlen(list);
		if (len == n && !strncmp(list, word, n))
			return 1;
		if (!comma)
			break;
		list = comma + 1;
	}
	return 0;
}

/* Item idx (mod count) of a comma-separated list, as a JSON string. */
static json_t *csv_pick(const char *list, long long idx)
{
	long long count = 1, k;
	const char *p;

	for (p = list; *p; p++)
		count += *p == ',';
	idx %= count;
	for (k = 0, p = list; k < idx; p++)
		k += *p == ',';
	return json_stringn(p, strcspn(p, ","));
}

/* Evaluates one feature_flags row for the user. Adds {value, source,
 * description, kind} to flags under the flag's name. */
static int add_flag(json_t *flags, sqlite3_stmt *st, const json_t *user)
{
	const char *name = (const char *)sqlite3_column_text(st, 0);
	const char *desc = (const char *)sqlite3_column_text(st, 1);
	const char *kind = (const char *)sqlite3_column_text(st, 2);
	const char *def = (const char *)sqlite3_column_text(st, 3);
	const char *rule = (const char *)sqlite3_column_text(st, 4);
	json_int_t uid = json_integer_value(json_object_get(user, "id"));
	const char *plan = json_string_value(json_object_get(user, "plan"));
	json_t *value = NULL;
	const char *source = "default";

	if (!name || !desc || !kind || !def)
		return -1;
	if (rule && !strncmp(rule, "plan-in:", 8)) {
		value = json_boolean(plan && csv_contains(rule + 8, plan));
		source = "server";
	} else if (rule && !strcmp(rule, "user-beta")) {
		value = json_boolean(json_integer_value(json_object_get(user, "beta")) != 0);
		source = "server";
	} else if (rule && !strncmp(rule, "bucket:", 7)) {
		value = csv_pick(rule + 7, uid);
		source = "server";
	} else {
		value = json_loads(def, JSON_DECODE_ANY, NULL);
	}
	if (!value)
		return -1;
	return json_object_set_new(flags, name, json_pack("{s:o,s:s,s:s,s:s}",
	                           "value", value, "source", source, "description", desc, "kind", kind));
}

static void api_session(struct lws *wsi, struct req *r, const struct qargs *q)
{
	sqlite3_stmt *st;
	json_t *user, *flags;
	const char *arg;
	long long uid;
	unsigned char rnd[8];
	char sid[17];
	int dup = 0, found, i, rc;

	arg = qarg(q, "user", &dup);
	if (dup) {
		reply_error(r, 400, "duplicate parameter");
		return;
	}
	uid = arg ? parse_uint(arg, NULL) : current_user(wsi);
	if (uid <= 0) {
		reply_error(r, 400, "user must be a positive integer");
		return;
	}
	st = prepare(app.rw, "SELECT id, name, email, plan, beta FROM users WHERE id = ?1");
	if (!st) {
		reply_db_error(r, app.rw, "session");
		return;
	}
	sqlite3_bind_int64(st, 1, uid);
	user = first_row(st, &found);
	if (!found) {
		reply_error(r, 404, "unknown user");
		return;
	}
	if (!user) {
		reply_db_error(r, app.rw, "session");
		return;
	}
	flags = json_object();
	st = prepare(app.rw, "SELECT name, description, kind, default_value, rule FROM feature_flags ORDER BY name");
	if (!st || !flags) {
		json_decref(user);
		json_decref(flags);
		reply_db_error(r, app.rw, "session flags");
		return;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (add_flag(flags, st, user))
			break;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		json_decref(user);
		json_decref(flags);
		reply_db_error(r, app.rw, "session flags");
		return;
	}
	/* The beta column only feeds the flags; the page sees id, name, email, plan. */
	json_object_del(user, "beta");
	if (lws_get_random(app.ctx, rnd, sizeof rnd) != sizeof rnd)
		memset(rnd, 0, sizeof rnd);
	for (i = 0; i < 8; i++)
		snprintf(sid + 2 * i, 3, "%02x", rnd[i]);
	if (arg)
		snprintf(r->cookie, sizeof r->cookie, "demo_user=%lld; Path=/; SameSite=Strict; HttpOnly", uid);
	reply_json(r, 200, json_pack("{s:s,s:o,s:o}", "sessionId", sid, "user", user, "flags", flags));
}

/* ------------------------------------------------------------------ */
/* API: reps and leads. */

static const char *const stages[] = {
	"new", "contacted", "qualified", "proposal", "negotiation", "won", "lost", NULL
};

#define LEAD_SELECT \
	"SELECT l.id, l.company, l.contact_name AS contactName, l.email, l.stage," \
	" l.value_cents AS valueCents, l.rep_id AS repId, r.name AS repName," \
	" l.updated_at AS updatedAt FROM leads l JOIN reps r ON r.id = l.rep_id"

static void api_reps(struct req *r)
{
	sqlite3_stmt *st = prepare(app.rw,
		"SELECT id, name, email, region, quota_cents AS quotaCents FROM reps ORDER BY id");
	json_t *rows = st ? collect_rows(st) : NULL;

	if (!rows) {
		reply_db_error(r, app.rw, "reps");
		return;
	}
	reply_json(r, 200, json_pack("{s:o}", "reps", rows));
}

static void api_leads(struct req *r, const struct qargs *q)
{
	const char *stage, *rep;
	long long rep_id = -1;
	sqlite3_stmt *st;
	json_t *rows;
	int dup = 0, i, known = 0;

	stage = qarg(q, "stage", &dup);
	rep = qarg(q, "rep", &dup);
	if (dup) {
		reply_error(r, 400, "duplicate parameter");
		return;
	}
	for (i = 0; stage && stages[i]; i++)
		known |= !strcmp(stage, stages[i]);
	if (stage && !known) {
		reply_error(r, 400, "unknown stage");
		return;
	}
	if (rep && (rep_id = parse_uint(rep, NULL)) <= 0) {
		reply_error(r, 400, "rep must be a positive integer");
		return;
	}
	st = prepare(app.rw, LEAD_SELECT
		" WHERE (?1 IS NULL OR l.stage = ?1) AND (?2 IS NULL OR l.rep_id = ?2) ORDER BY l.id");
	if (!st) {
		reply_db_error(r, app.rw, "leads");
		return;
	}
	if (stage)
		sqlite3_bind_text(st, 1, stage, -1, SQLITE_TRANSIENT);
	if (rep_id > 0)
		sqlite3_bind_int64(st, 2, rep_id);
	rows = collect_rows(st);
	if (!rows) {
		reply_db_error(r, app.rw, "leads");
		return;
	}
	if (stage)
		reply_json(r, 200, json_pack("{s:s,s:o}", "stage", stage, "leads", rows));
	else
		reply_json(r, 200, json_pack("{s:o}", "leads", rows));
}

/* The lead as an object, or NULL with *found = 0 (no such lead) or 1 (error). */
static json_t *load_lead(long long id, int *found)
{
	sqlite3_stmt *st = prepare(app.rw, LEAD_SELECT " WHERE l.id = ?1");

	if (!st) {
		*found = 1;
		return NULL;
	}
	sqlite3_bind_int64(st, 1, id);
	return first_row(st, found);
}

static void api_lead(struct req *r, long long id)
{
	int found;
	json_t *lead = load_lead(id, &found);

	if (!found)
		reply_error(r, 404, "lead not found");
	else if (!lead)
		reply_db_error(r, app.rw, "lead");
	else
		reply_json(r, 200, json_pack("{s:o}", "lead", lead));
}

/* Parses the request body as a JSON object. NULL after replying 400. New reference. */
static json_t *body_object(struct req *r)
{
	json_t *v;
	json_error_t err;

	if (!r->body || !r->body_len) {
		reply_error(r, 400, "request body must be a JSON object");
		return NULL;
	}
	v = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &err);
	if (!v) {
		reply_error(r, 400, "request body is not valid JSON");
		return NULL;
	}
	if (!json_is_object(v)) {
		json_decref(v);
		reply_error(r, 400, "request body must be a JSON object");
		return NULL;
	}
	return v;
}

static void api_assign(struct req *r, long long lead_id)
{
	json_t *body, *lead;
	json_int_t rep_id;
	sqlite3_stmt *st;
	int found, rc;

	body = body_object(r);
	if (!body)
		return;
	if (!json_is_integer(json_object_get(body, "repId")) || json_object_size(body) != 1) {
		json_decref(body);
		reply_error(r, 400, "body must be {\"repId\": <integer>}");
		return;
	}
	rep_id = json_integer_value(json_object_get(body, "repId"));
	json_decref(body);
	lead = load_lead(lead_id, &found);
	if (!found) {
		reply_error(r, 404, "lead not found");
		return;
	}
	if (!lead) {
		reply_db_error(r, app.rw, "assign");
		return;
	}
	json_decref(lead);
	rc = row_exists("SELECT 1 FROM reps WHERE id = ?1", rep_id);
	if (rc == SQLITE_DONE) {
		reply_error(r, 400, "unknown rep");
		return;
	}
	st = rc == SQLITE_ROW
		? prepare(app.rw, "UPDATE leads SET rep_id = ?1, updated_at = datetime('now') WHERE id = ?2") : NULL;
	if (!st) {
		reply_db_error(r, app.rw, "assign");
		return;
	}
	sqlite3_bind_int64(st, 1, rep_id);
	sqlite3_bind_int64(st, 2, lead_id);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		reply_db_error(r, app.rw, "assign");
		return;
	}
	api_lead(r, lead_id);
}

/* ------------------------------------------------------------------ */
/* API: products, orders, support tickets. */

static void api_products(struct req *r)
{
	sqlite3_stmt *st = prepare(app.rw,
		"SELECT id, sku, name, description, price_cents AS priceCents, stock FROM products ORDER BY id");
	json_t *rows = st ? collect_rows(st) : NULL;

	if (!rows) {
		reply_db_error(r, app.rw, "products");
		return;
	}
	reply_json(r, 200, json_pack("{s:o}", "products", rows));
}

#define ORDER_SELECT \
	"SELECT id, user_id AS userId, status, subtotal_cents AS subtotalCents," \
	" shipping_cents AS shippingCents, tax_cents AS taxCents, total_cents AS totalCents," \
	" created_at AS createdAt FROM orders"

/* The order with its items, or NULL with *found = 0 (none for this user) or 1 (error). */
static json_t *load_order(long long id, long long uid, int *found)
{
	sqlite3_stmt *st = prepare(app.rw, ORDER_SELECT " WHERE id = ?1 AND user_id = ?2");
	json_t *order, *items;

	*found = 1;
	if (!st)
		return NULL;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, uid);
	order = first_row(st, found);
	if (!order)
		return NULL;
	st = prepare(app.rw,
		"SELECT oi.product_id AS productId, p.name, oi.qty, oi.unit_price_cents AS unitPriceCents,"
		" oi.line_total_cents AS lineTotalCents FROM order_items oi"
		" JOIN products p ON p.id = oi.product_id WHERE oi.order_id = ?1 ORDER BY oi.id");
	if (!st) {
		json_decref(order);
		return NULL;
	}
	sqlite3_bind_int64(st, 1, id);
	items = collect_rows(st);
	if (!items || json_object_set_new(order, "items", items)) {
		json_decref(order);
		return NULL;
	}
	return order;
}

static void api_order(struct lws *wsi, struct req *r, long long id)
{
	int found;
	json_t *order = load_order(id, current_user(wsi), &found);

	if (!found)
		reply_error(r, 404, "order not found");
	else if (!order)
		reply_db_error(r, app.rw, "order");
	else
		reply_json(r, 200, json_pack("{s:o}", "order", order));
}

static void api_orders(struct lws *wsi, struct req *r)
{
	sqlite3_stmt *st = prepare(app.rw, ORDER_SELECT " WHERE user_id = ?1 ORDER BY id DESC LIMIT 50");
	json_t *rows;

	if (!st) {
		reply_db_error(r, app.rw, "orders");
		return;
	}
	sqlite3_bind_int64(st, 1, current_user(wsi));
	rows = collect_rows(st);
	if (!rows) {
		reply_db_error(r, app.rw, "orders");
		return;
	}
	reply_json(r, 200, json_pack("{s:o}", "orders", rows));
}

struct order_line {
	long long product_id, qty, unit_cents;
};

struct totals {
	long long subtotal, shipping, tax, total;
};

/* Shipping is flat under the free-shipping threshold.
 * Planted bug (README.md): tax is charged on subtotal + shipping, while the
 * checkout page (and the shop's terms) tax the goods only, so every order that
 * pays shipping is stored round(5.99 * 8%) = 48 cents above what the page showed. */
static struct totals order_totals(const struct order_line *lines, int n)
{
	struct totals t = { 0, 0, 0, 0 };
	int i;

	for (i = 0; i < n; i++)
		t.subtotal += lines[i].unit_cents * lines[i].qty;
	t.shipping = t.subtotal >= FREE_SHIPPING_FROM_CENTS ? 0 : SHIPPING_CENTS;
	t.tax = ((t.subtotal + t.shipping) * TAX_PERCENT + 50) / 100;   /* half up */
	t.total = t.subtotal + t.shipping + t.tax;
	return t;
}

/* Reads and checks {"items":[{"productId":n,"qty":n}, ...]}; replies 400 and returns -1 on bad input. */
static int read_order_lines(struct req *r, struct order_line *lines)
{
	json_t *body = body_object(r), *items, *it;
	size_t i;
	int n = -1;

	if (!body)
		return -1;
	items = json_object_get(body, "items");
	if (!json_is_array(items) || json_object_size(body) != 1) {
		reply_error(r, 400, "body must be {\"items\": [{\"productId\": n, \"qty\": n}, ...]}");
	} else if (json_array_size(items) == 0) {
		reply_error(r, 400, "items must not be empty");
	} else if (json_array_size(items) > MAX_ORDER_LINES) {
		reply_error(r, 400, "too many items");
	} else {
		n = (int)json_array_size(items);
		json_array_foreach(items, i, it) {
			json_t *pid = json_object_get(it, "productId"), *qty = json_object_get(it, "qty");
			if (!json_is_object(it) || !json_is_integer(pid) || !json_is_integer(qty)
			    || json_object_size(it) != 2) {
				reply_error(r, 400, "each item must be {\"productId\": <integer>, \"qty\": <integer>}");
				n = -1;
				break;
			}
			if (json_integer_value(qty) < 1 || json_integer_value(qty) > 99) {
				reply_error(r, 400, "qty must be between 1 and 99");
				n = -1;
				break;
			}
			lines[i].product_id = json_integer_value(pid);
			lines[i].qty = json_integer_value(qty);
		}
	}
	json_decref(body);
	return n;
}

static void api_create_order(struct lws *wsi, struct req *r)
{
	struct order_line lines[MAX_ORDER_LINES];
	struct totals t;
	sqlite3_stmt *st;
	long long uid = current_user(wsi), order_id;
	json_t *order;
	int n, i, rc, found;

	n = read_order_lines(r, lines);
	if (n < 0)
		return;
	rc = row_exists("SELECT 1 FROM users WHERE id = ?1", uid);
	if (rc != SQLITE_ROW) {
		if (rc == SQLITE_DONE)
			reply_error(r, 404, "unknown user");
		else
			reply_db_error(r, app.rw, "order user");
		return;
	}
	st = prepare(app.rw, "SELECT price_cents FROM products WHERE id = ?1");
	if (!st) {
		reply_db_error(r, app.rw, "order prices");
		return;
	}
	for (i = 0; i < n; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, lines[i].product_id);
		rc = sqlite3_step(st);
		if (rc == SQLITE_DONE) {
			char msg[64];
			sqlite3_finalize(st);
			snprintf(msg, sizeof msg, "unknown product %lld", lines[i].product_id);
			reply_error(r, 400, msg);
			return;
		}
		if (rc != SQLITE_ROW) {
			sqlite3_finalize(st);
			reply_db_error(r, app.rw, "order prices");
			return;
		}
		lines[i].unit_cents = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	if (sqlite3_exec(app.rw, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		reply_db_error(r, app.rw, "order begin");
		return;
	}
	t = order_totals(lines, n);
	st = prepare(app.rw, "INSERT INTO orders (user_id, status, subtotal_cents, shipping_cents,"
		" tax_cents, total_cents, created_at) VALUES (?1, 'placed', ?2, ?3, ?4, ?5, datetime('now'))");
	rc = SQLITE_ERROR;
	if (st) {
		sqlite3_bind_int64(st, 1, uid);
		sqlite3_bind_int64(st, 2, t.subtotal);
		sqlite3_bind_int64(st, 3, t.shipping);
		sqlite3_bind_int64(st, 4, t.tax);
		sqlite3_bind_int64(st, 5, t.total);
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
	}
	order_id = sqlite3_last_insert_rowid(app.rw);
	st = rc == SQLITE_DONE ? prepare(app.rw, "INSERT INTO order_items (order_id, product_id, qty,"
		" unit_price_cents, line_total_cents) VALUES (?1, ?2, ?3, ?4, ?5)") : NULL;
	for (i = 0; st && i < n && rc == SQLITE_DONE; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, order_id);
		sqlite3_bind_int64(st, 2, lines[i].product_id);
		sqlite3_bind_int64(st, 3, lines[i].qty);
		sqlite3_bind_int64(st, 4, lines[i].unit_cents);
		sqlite3_bind_int64(st, 5, lines[i].unit_cents * lines[i].qty);
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	if (!st || rc != SQLITE_DONE || sqlite3_exec(app.rw, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		fprintf(stderr, "app: database error in order insert: %s\n", sqlite3_errmsg(app.rw));
		sqlite3_exec(app.rw, "ROLLBACK", NULL, NULL, NULL);
		reply_error(r, 500, "internal error");
		return;
	}
	order = load_order(order_id, uid, &found);
	if (!order) {
		reply_db_error(r, app.rw, "order reload");
		return;
	}
	reply_json(r, 201, json_pack("{s:o}", "order", order));
}

static void api_tickets(struct lws *wsi, struct req *r, const struct qargs *q)
{
	const char *status, *user;
	sqlite3_stmt *st;
	json_t *rows;
	long long uid;
	int dup = 0;

	/* user: the widget is on the other origin, so it cannot see the page's
	 * cookie; the page hands it the user id in the widget's URL. */
	status = qarg(q, "status", &dup);
	user = qarg(q, "user", &dup);
	if (dup) {
		reply_error(r, 400, "duplicate parameter");
		return;
	}
	uid = user ? parse_uint(user, NULL) : current_user(wsi);
	if (uid <= 0) {
		reply_error(r, 400, "user must be a positive integer");
		return;
	}
	if (status && !strcmp(status, "all"))
		status = NULL;
	if (status && strcmp(status, "open") && strcmp(status, "pending") && strcmp(status, "closed")) {
		reply_error(r, 400, "status must be open, pending, closed or all");
		return;
	}
	st = prepare(app.rw, "SELECT id, subject, status, priority, created_at AS createdAt"
		" FROM support_tickets WHERE user_id = ?1 AND (?2 IS NULL OR status = ?2) ORDER BY id");
	if (!st) {
		reply_db_error(r, app.rw, "tickets");
		return;
	}
	sqlite3_bind_int64(st, 1, uid);
	if (status)
		sqlite3_bind_text(st, 2, status, -1, SQLITE_TRANSIENT);
	rows = collect_rows(st);
	if (!rows) {
		reply_db_error(r, app.rw, "tickets");
		return;
	}
	reply_json(r, 200, json_pack("{s:o}", "tickets", rows));
}

/* ------------------------------------------------------------------ */
/* GET /api/debug/db-inspect?table=&limit=&after=
 *
 * Read-only by construction: its own connection is opened with
 * SQLITE_OPEN_READONLY and PRAGMA query_only; the table must equal one of the
 * names below byte for byte, and the SQL run is that entry's constant (the
 * request text never reaches SQL); limit is a bound parameter of 1..100,
 * after (rows whose id is above it) one of 0..999999999, for the tables
 * keyed by an integer id.
 * Errors: missing table 400, unknown table 404 (with the allowed names),
 * bad limit or after 400, after on feature_flags 400, duplicate parameter
 * 400, any method but GET 405. Rows come ordered by primary key. users is
 * listed without password_hash. */

static const struct inspect_table {
	const char *name;
	const char *sql;
	int by_id;                   /* keyed by an integer id: takes after (?2) */
} inspect_tables[] = {
	{ "feature_flags",   "SELECT name, description, kind, default_value, rule FROM feature_flags ORDER BY name LIMIT ?1", 0 },
	{ "leads",           "SELECT id, company, contact_name, email, stage, value_cents, rep_id, updated_at FROM leads WHERE id > ?2 ORDER BY id LIMIT ?1", 1 },
	{ "order_items",     "SELECT id, order_id, product_id, qty, unit_price_cents, line_total_cents FROM order_items WHERE id > ?2 ORDER BY id LIMIT ?1", 1 },
	{ "orders",          "SELECT id, user_id, status, subtotal_cents, shipping_cents, tax_cents, total_cents, created_at FROM orders WHERE id > ?2 ORDER BY id LIMIT ?1", 1 },
	{ "products",        "SELECT id, sku, name, description, price_cents, stock FROM products WHERE id > ?2 ORDER BY id LIMIT ?1", 1 },
	{ "reps",            "SELECT id, name, email, region, quota_cents FROM reps WHERE id > ?2 ORDER BY id LIMIT ?1", 1 },
	{ "support_tickets", "SELECT id, user_id, subject, status, priority, created_at FROM support_tickets WHERE id > ?2 ORDER BY id LIMIT ?1", 1 },
	{ "users",           "SELECT id, name, email, plan, beta, created_at FROM users WHERE id > ?2 ORDER BY id LIMIT ?1", 1 },
};
#define N_INSPECT_TABLES ((int)(sizeof inspect_tables / sizeof inspect_tables[0]))

static void api_db_inspect(struct req *r, const struct qargs *q)
{
	const struct inspect_table *t = NULL;
	const char *table, *limit_arg, *after_arg;
	long long limit = INSPECT_DEFAULT_LIMIT, after = -1;
	sqlite3_stmt *st;
	json_t *columns, *rows;
	int dup = 0, i;

	/* Strict: lws also splits arguments at ';', so "table=orders;DROP TABLE
	 * orders" arrives as table=orders plus a stray argument, which is refused. */
	for (i = 0; i < q->n; i++) {
		if (strcmp(q->name[i], "table") && strcmp(q->name[i], "limit") && strcmp(q->name[i], "after")) {
			reply_error(r, 400, "unknown parameter (allowed: table, limit, after)");
			return;
		}
	}
	table = qarg(q, "table", &dup);
	limit_arg = qarg(q, "limit", &dup);
	after_arg = qarg(q, "after", &dup);
	if (dup) {
		reply_error(r, 400, "duplicate parameter");
		return;
	}
	if (!table || !table[0]) {
		reply_error(r, 400, "missing parameter: table");
		return;
	}
	for (i = 0; i < N_INSPECT_TABLES; i++)
		if (!strcmp(table, inspect_tables[i].name))
			t = &inspect_tables[i];
	if (!t) {
		json_t *allowed = json_array();
		for (i = 0; i < N_INSPECT_TABLES; i++)
			json_array_append_new(allowed, json_string(inspect_tables[i].name));
		reply_json(r, 404, json_pack("{s:s,s:o}", "error", "unknown table", "allowed", allowed));
		return;
	}
	if (limit_arg) {
		limit = parse_uint(limit_arg, NULL);
		if (limit < 1 || limit > INSPECT_MAX_LIMIT) {
			reply_error(r, 400, "limit must be an integer between 1 and 100");
			return;
		}
	}
	if (after_arg) {
		if (!t->by_id) {
			reply_error(r, 400, "after: this table is ordered by name, not by id");
			return;
		}
		after = parse_uint(after_arg, NULL);
		if (after < 0) {
			reply_error(r, 400, "after must be an integer between 0 and 999999999");
			return;
		}
	}
	st = prepare(app.ro, t->sql);
	if (!st) {
		reply_db_error(r, app.ro, "db-inspect");
		return;
	}
	sqlite3_bind_int64(st, 1, limit);
	if (t->by_id)
		sqlite3_bind_int64(st, 2, after);    /* -1: every row (ids start at 1) */
	columns = json_array();
	for (i = 0; i < sqlite3_column_count(st); i++)
		json_array_append_new(columns, json_string(sqlite3_column_name(st, i)));
	rows = collect_rows(st);
	if (!rows || !columns) {
		json_decref(columns);
		json_decref(rows);
		reply_db_error(r, app.ro, "db-inspect");
		return;
	}
	reply_json(r, 200, json_pack("{s:s,s:I,s:o,s:o}", "table", t->name, "limit", (json_int_t)limit,
	                             "columns", columns, "rows", rows));
}

/* ------------------------------------------------------------------ */
/* Routing. */

static void route_api(struct lws *wsi, struct req *r)
{
	const char *p = r->path + 4, *rest;   /* after "/api" */
	int m = r->method, get = m == LWSHUMETH_GET, post = m == LWSHUMETH_POST;
	long long id;
	struct qargs q;

	qargs_load(wsi, &q);
	if (q.bad) {
		reply_error(r, 400, "query string too long");
		return;
	}
	if (!strcmp(p, "/session")) {
		if (get) api_session(wsi, r, &q); else reply_method_not_allowed(r, "GET");
	} else if (!strcmp(p, "/reps")) {
		if (get) api_reps(r); else reply_method_not_allowed(r, "GET");
	} else if (!strcmp(p, "/leads")) {
		if (get) api_leads(r, &q); else reply_method_not_allowed(r, "GET");
	} else if (!strncmp(p, "/leads/", 7) && (id = parse_uint(p + 7, &rest)) > 0
	           && (!*rest || !strcmp(rest, "/assign"))) {
		if (!*rest) {
			if (get) api_lead(r, id); else reply_method_not_allowed(r, "GET");
		} else {
			if (post) api_assign(r, id); else reply_method_not_allowed(r, "POST");
		}
	} else if (!strcmp(p, "/products")) {
		if (get) api_products(r); else reply_method_not_allowed(r, "GET");
	} else if (!strcmp(p, "/orders")) {
		if (get) api_orders(wsi, r);
		else if (post) api_create_order(wsi, r);
		else reply_method_not_allowed(r, "GET, POST");
	} else if (!strncmp(p, "/orders/", 8) && (id = parse_uint(p + 8, &rest)) > 0 && !*rest) {
		if (get) api_order(wsi, r, id); else reply_method_not_allowed(r, "GET");
	} else if (!strcmp(p, "/support/tickets")) {
		if (get) api_tickets(wsi, r, &q); else reply_method_not_allowed(r, "GET");
	} else if (!strcmp(p, "/debug/db-inspect")) {
		if (get) api_db_inspect(r, &q); else reply_method_not_allowed(r, "GET");
	} else {
		reply_error(r, 404, "no such endpoint");
	}
}

static const char *content_type(const char *path)
{
	static const struct { const char *ext, *type; } types[] = {
		{ ".html", "text/html; charset=utf-8" },
		{ ".js",   "text/javascript; charset=utf-8" },
		{ ".css",  "text/css; charset=utf-8" },
		{ ".json", "application/json" },
		{ ".svg",  "image/svg+xml" },
		{ ".png",  "image/png" },
		{ ".ico",  "image/x-icon" },
		{ ".txt",  "text/plain; charset=utf-8" },
	};
	const char *dot = strrchr(path, '.');
	size_t i;

	for (i = 0; dot && i < sizeof types / sizeof types[0]; i++)
		if (!strcmp(dot, types[i].ext))
			return types[i].type;
	return "application/octet-stream";
}

/* Only [A-Za-z0-9._-] segments that do not start with '.', so no "..",
 * no hidden files, no empty segments. */
static int static_path_ok(const char *p)
{
	if (*p != '/')
		return 0;
	for (; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '/') {
			if (p[1] == '/' || p[1] == '.')
				return 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		      || c == '.' || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

static void serve_static(struct req *r)
{
	char full[PATH_MAX], real[PATH_MAX];
	const char *path = strcmp(r->path, "/") ? r->path : "/index.html";
	size_t rootlen = strlen(app.root);
	struct stat sb;
	char *data;
	int fd;
	ssize_t got;

	if (r->method != LWSHUMETH_GET) {
		reply_method_not_allowed(r, "GET");
		return;
	}
	if (!static_path_ok(path)) {
		reply_error(r, 400, "bad path");
		return;
	}
	if ((size_t)snprintf(full, sizeof full, "%s%s", app.root, path) >= sizeof full
	    || !realpath(full, real) || strncmp(real, app.root, rootlen) || real[rootlen] != '/') {
		reply_error(r, 404, "not found");
		return;
	}
	fd = open(real, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_size > MAX_STATIC) {
		if (fd >= 0)
			close(fd);
		reply_error(r, 404, "not found");
		return;
	}
	data = malloc((size_t)sb.st_size + 1);   /* owned: freed below after copying */
	got = data ? read(fd, data, (size_t)sb.st_size) : -1;
	close(fd);
	if (got != sb.st_size) {
		free(data);
		reply_error(r, 500, "internal error");
		return;
	}
	reply_bytes(r, 200, content_type(path), data, (size_t)sb.st_size);
	free(data);
}

/* Host must name this server: a guard against DNS rebinding. */
static int host_ok(struct lws *wsi)
{
	char host[128], a[40], b[40];

	if (lws_hdr_total_length(wsi, WSI_TOKEN_HOST) <= 0)
		return 1;   /* HTTP/1.0 without Host */
	if (lws_hdr_copy(wsi, host, sizeof host, WSI_TOKEN_HOST) < 0)
		return 0;
	snprintf(a, sizeof a, "127.0.0.1:%d", app.port);
	snprintf(b, sizeof b, "localhost:%d", app.port);
	return !strcmp(host, a) || !strcmp(host, b) || !strcmp(host, "127.0.0.1") || !strcmp(host, "localhost");
}

static void dispatch(struct lws *wsi, struct req *r)
{
	if (!strncmp(r->path, "/api/", 5) || !strcmp(r->path, "/api"))
		route_api(wsi, r);
	else
		serve_static(r);
}

/* ------------------------------------------------------------------ */
/* lws glue. */

static int write_reply(struct lws *wsi, struct req *r)
{
	unsigned char hbuf[LWS_PRE + 2048], *start = hbuf + LWS_PRE, *p = start, *end = hbuf + sizeof hbuf - 1;
	size_t chunk;
	int final;

	if (!r->headers_sent) {
		if (lws_add_http_common_headers(wsi, (unsigned int)r->status, r->ctype ? r->ctype : "application/json",
		                                r->out_len, &p, end)
		    || lws_add_http_header_by_name(wsi, (const unsigned char *)"cache-control:",
		           (const unsigned char *)(r->api ? "no-store" : "no-cache"), 8, &p, end)
		    || lws_add_http_header_by_name(wsi, (const unsigned char *)"x-content-type-options:",
		           (const unsigned char *)"nosniff", 7, &p, end))
			return -1;
		if (r->allow && lws_add_http_header_by_name(wsi, (const unsigned char *)"allow:",
		                   (const unsigned char *)r->allow, (int)strlen(r->allow), &p, end))
			return -1;
		if (r->cookie[0] && lws_add_http_header_by_name(wsi, (const unsigned char *)"set-cookie:",
		                   (const unsigned char *)r->cookie, (int)strlen(r->cookie), &p, end))
			return -1;
		if (r->method == LWSHUMETH_HEAD) {
			r->out_len = 0;          /* headers only; the connection closes after them */
			r->close_after = 1;
		}
		if (r->close_after && lws_add_http_header_by_name(wsi, (const unsigned char *)"connection:",
		                   (const unsigned char *)"close", 5, &p, end))
			return -1;
		if (lws_finalize_write_http_header(wsi, start, &p, end))
			return -1;
		r->headers_sent = 1;
		if (r->out_len) {
			lws_callback_on_writable(wsi);
			return 0;
		}
	} else {
		/* The LWS_PRE bytes before each chunk are headroom or bytes already sent. */
		chunk = r->out_len - r->out_off;
		if (chunk > 16384)
			chunk = 16384;
		final = r->out_off + chunk == r->out_len;
		if (lws_write(wsi, r->out + LWS_PRE + r->out_off, chunk,
		              final ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) != (int)chunk)
			return -1;
		r->out_off += chunk;
		if (!final) {
			lws_callback_on_writable(wsi);
			return 0;
		}
	}
	log_request(r);
	req_free(r);
	r->status = 0;
	if (r->close_after)
		return -1;
	return lws_http_transaction_completed(wsi) ? -1 : 0;
}

static void respond(struct lws *wsi, struct req *r)
{
	r->waiting_body = 0;
	lws_callback_on_writable(wsi);
}

static int on_http(struct lws *wsi, struct req *r, const char *uri)
{
	char *mu = NULL, cl[24] = "";
	int mlen = 0, i, n;
	long long clen = 0;

	req_free(r);
	memset(r, 0, sizeof *r);
	clock_gettime(CLOCK_MONOTONIC, &r->t0);
	r->method = lws_http_get_uri_and_method(wsi, &mu, &mlen);
	snprintf(r->path, sizeof r->path, "%s", uri ? uri : "");
	for (i = 0, n = 0; i < 16; i++) {
		char frag[256];
		if (lws_hdr_copy_fragment(wsi, frag, sizeof frag, WSI_TOKEN_HTTP_URI_ARGS, i) < 0)
			break;
		n += snprintf(r->query + n, sizeof r->query - (size_t)n, "%s%s", i ? "&" : "", frag);
		if (n >= (int)sizeof r->query)
			break;
	}

	if (strlen(uri ? uri : "") >= sizeof r->path) {
		r->close_after = 1;
		reply_error(r, 414, "path too long");
		respond(wsi, r);
		return 0;
	}
	if (!host_ok(wsi)) {
		r->close_after = 1;
		reply_error(r, 403, "unexpected Host header");
		respond(wsi, r);
		return 0;
	}
	if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0) {
		/* Checked first: with a Content-Length beside it, a body read by
		 * the length would let the rest pass as another request */
		r->close_after = 1;
		reply_error(r, 411, "Content-Length required");
		respond(wsi, r);
		return 0;
	} else if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0) {
		/* More than 9 digits (or than the buffer) is far over any limit. */
		if (lws_hdr_copy(wsi, cl, sizeof cl, WSI_TOKEN_HTTP_CONTENT_LENGTH) < 0)
			clen = MAX_DRAIN + 1LL;
		else if (cl[strspn(cl, "0123456789")] || !cl[0]) {
			r->close_after = 1;
			reply_error(r, 400, "bad Content-Length");
			respond(wsi, r);
			return 0;
		} else
			clen = strlen(cl) > 9 ? MAX_DRAIN + 1LL : parse_uint(cl, NULL);
	} else if (r->method == LWSHUMETH_POST || r->method == LWSHUMETH_PUT || r->method == LWSHUMETH_PATCH) {
		/* No length: lws keeps waiting for a body that never comes, so
		 * answer (as a request without a body) and close. */
		r->close_after = 1;
	}
	if (clen > MAX_DRAIN) {
		r->close_after = 1;
		reply_error(r, 413, "request body too large");
		respond(wsi, r);
		return 0;
	}
	if (clen > 0) {
		/* lws now delivers the body; we answer at LWS_CALLBACK_HTTP_BODY_COMPLETION. */
		r->waiting_body = 1;
		r->too_large = clen > MAX_BODY;
		return 0;
	}
	dispatch(wsi, r);
	respond(wsi, r);
	return 0;
}

static int callback_http(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
	struct req *r = user;

	switch (reason) {
	case LWS_CALLBACK_HTTP:
		return on_http(wsi, r, in);

	case LWS_CALLBACK_HTTP_BODY:
		if (!r->waiting_body || r->too_large)
			return 0;   /* dropped: the reply is 413 */
		if (r->body_len + len > MAX_BODY) {
			r->too_large = 1;
			free(r->body);
			r->body = NULL;
			r->body_len = 0;
			return 0;
		}
		{
			char *nb = realloc(r->body, r->body_len + len + 1);   /* owned by r */
			if (!nb)
				return -1;
			r->body = nb;
			memcpy(r->body + r->body_len, in, len);
			r->body_len += len;
			r->body[r->body_len] = '\0';
		}
		return 0;

	case LWS_CALLBACK_HTTP_BODY_COMPLETION:
		if (!r->waiting_body)
			return 0;
		if (r->too_large)
			reply_error(r, 413, "request body too large");
		else
			dispatch(wsi, r);
		respond(wsi, r);
		return 0;

	case LWS_CALLBACK_HTTP_WRITEABLE:
		if (!r || !r->status || r->waiting_body)
			return 0;
		return write_reply(wsi, r);

	case LWS_CALLBACK_CLOSED_HTTP:
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
		if (r) {
			if (r->status)
				log_request(r);   /* reply cut short by the peer */
			r->status = 0;
			req_free(r);
		}
		return 0;

	default:
		break;
	}
	return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static const struct lws_protocols protocols[] = {
	{ "http", callback_http, sizeof(struct req), 0, 0, NULL, 0 },
	{ NULL, NULL, 0, 0, 0, NULL, 0 }
};

/* ------------------------------------------------------------------ */
/* Start-up: arguments, database, signals. */

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
	if (serving)
		lws_cancel_service(app.ctx);   /* wakes lws_service: a write to its pipe */
}

/* Reads a whole file (at most max bytes) into a NUL-terminated heap buffer the caller frees. */
static char *read_file(const char *path, size_t max)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;

	if (!f)
		return NULL;
	buf = malloc(max + 1);   /* owned by the caller */
	n = buf ? fread(buf, 1, max + 1, f) : 0;
	fclose(f);
	if (!buf || n > max) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

static void remove_db_files(const char *db)
{
	static const char *const suffixes[] = { "", "-journal", "-wal", "-shm" };
	char p[PATH_MAX + 16];
	size_t i;

	for (i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
		snprintf(p, sizeof p, "%s%s", db, suffixes[i]);
		if (unlink(p) && errno != ENOENT)
			fprintf(stderr, "app: cannot remove %s: %s\n", p, strerror(errno));
	}
}

static int open_db(const char *db, const char *seed_path)
{
	char *seed = read_file(seed_path, 1 << 20);   /* owned: freed below */
	char *err = NULL;

	if (!seed) {
		fprintf(stderr, "app: cannot read seed %s\n", seed_path);
		return -1;
	}
	remove_db_files(db);
	if (sqlite3_open_v2(db, &app.rw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK
	    || sqlite3_exec(app.rw, seed, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "app: cannot build %s from %s: %s\n", db, seed_path,
		        err ? err : sqlite3_errmsg(app.rw));
		sqlite3_free(err);
		free(seed);
		return -1;
	}
	free(seed);
	sqlite3_busy_timeout(app.rw, 2000);
	sqlite3_exec(app.rw, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
	if (sqlite3_open_v2(db, &app.ro, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK
	    || sqlite3_exec(app.ro, "PRAGMA query_only = ON", NULL, NULL, NULL) != SQLITE_OK) {
		fprintf(stderr, "app: cannot open %s read-only: %s\n", db, sqlite3_errmsg(app.ro));
		return -1;
	}
	sqlite3_busy_timeout(app.ro, 2000);
	return 0;
}

/* Finds a default file: rel under the working directory, else under the
 * source tree next to the executable (build/app/server -> ../../rel). */
static int find_default(char *out, size_t n, const char *rel)
{
	char exe[PATH_MAX], *slash;
	ssize_t len;
	struct stat sb;

	snprintf(out, n, "%s", rel);
	if (!stat(out, &sb))
		return 0;
	len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len <= 0)
		return -1;
	exe[len] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	if ((size_t)snprintf(out, n, "%s/../../%s", exe, rel) >= n)
		return -1;
	return stat(out, &sb) ? -1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: server [--port N] [--root DIR] [--seed FILE] [--db PATH]\n"
	           "  --port N     port on 127.0.0.1 (default 8080; 0 picks a free one)\n"
	           "  --root DIR   front-end files (default examples/app/public)\n"
	           "  --seed FILE  SQL that builds the database (default examples/app/seed.sql)\n"
	           "  --db PATH    database file, rebuilt at start and kept\n"
	           "               (default: a temporary file removed on exit)\n"
	           "Prints \"listening on http://127.0.0.1:PORT/\" once ready; SIGTERM stops it.\n");
}

/* port_unusable(port) -> 1 (after saying why on stderr) when 127.0.0.1:port
 * cannot be bound: taken by another program, or not ours to take. */
static int port_unusable(long port)
{
	struct sockaddr_in a;
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;                    /* libwebsockets will say */
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0) {
		close(fd);
		return 0;
	}
	fprintf(stderr, "app: cannot listen on 127.0.0.1:%ld: %s%s\n", port, strerror(errno),
	        errno == EADDRINUSE ? " (another program listens there: pick another --port, or 0 for a free one)" : "");
	close(fd);
	return 1;
}

int main(int argc, char **argv)
{
	struct lws_context_creation_info info;
	struct sigaction sa;
	char root[PATH_MAX], seed[PATH_MAX], db[PATH_MAX], tmpdir[PATH_MAX - 32] = "";
	const char *root_arg = NULL, *seed_arg = NULL, *db_arg = NULL;
	long port = 8080;
	int i, rc = 0;

	for (i = 1; i < argc; i += 2) {   /* every option takes a value */
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		}
		if (!v) {
			usage(stderr);
			return 2;
		}
		if (!strcmp(a, "--port")) {
			errno = 0;
			port = strtol(v, &end, 10);
			if (errno || *end || end == v || port < 0 || port > 65535) {
				fprintf(stderr, "app: bad port %s\n", v);
				return 2;
			}
		} else if (!strcmp(a, "--root")) {
			root_arg = v;
		} else if (!strcmp(a, "--seed")) {
			seed_arg = v;
		} else if (!strcmp(a, "--db")) {
			db_arg = v;
		} else {
			usage(stderr);
			return 2;
		}
	}

	if (root_arg)
		snprintf(root, sizeof root, "%s", root_arg);
	else if (find_default(root, sizeof root, "examples/app/public")) {
		fprintf(stderr, "app: cannot find examples/app/public; pass --root\n");
		return 2;
	}
	if (seed_arg)
		snprintf(seed, sizeof seed, "%s", seed_arg);
	else if (find_default(seed, sizeof seed, "examples/app/seed.sql")) {
		fprintf(stderr, "app: cannot find examples/app/seed.sql; pass --seed\n");
		return 2;
	}
	if (!realpath(root, app.root)) {
		fprintf(stderr, "app: bad --root %s: %s\n", root, strerror(errno));
		return 2;
	}
	if (db_arg) {
		snprintf(db, sizeof db, "%s", db_arg);
	} else {
		const char *t = getenv("TMPDIR");
		snprintf(tmpdir, sizeof tmpdir, "%s/dt-app-XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(tmpdir)) {
			fprintf(stderr, "app: cannot create a temporary directory: %s\n", strerror(errno));
			return 1;
		}
		snprintf(db, sizeof db, "%s/app.db", tmpdir);
	}

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);

	if (open_db(db, seed)) {
		rc = 1;
		goto out;
	}

	/* Said in our words, before libwebsockets tries (and prints its own
	 * three lines): the port is taken, or we may not bind it. */
	if (port != 0 && port_unusable(port))
		goto out_listen;
	/* (quiet while it starts: what fails there is said below, once) */
	lws_set_log_level(0, NULL);
	memset(&info, 0, sizeof info);
	info.port = (int)port;
	info.iface = "127.0.0.1";
	info.protocols = protocols;
	info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
	info.gid = -1;
	info.uid = -1;
	info.vhost_name = "app";
	app.ctx = lws_create_context(&info);
	if (!app.ctx) {
		fprintf(stderr, "app: cannot listen on 127.0.0.1:%ld\n", port);
		rc = 1;
		goto out;
	}
	lws_set_log_level(LLL_ERR, NULL);
	app.port = lws_get_vhost_listen_port(lws_get_vhost_by_name(app.ctx, "app"));
	if (app.port <= 0) {
out_listen:
		rc = 1;
		goto out;
	}
	fprintf(stderr, "app: database %s (built from %s), serving %s\n", db, seed, app.root);
	printf("listening on http://127.0.0.1:%d/\n", app.port);
	fflush(stdout);

	serving = 1;
	while (!stop_requested)
		if (lws_service(app.ctx, 0) < 0)
			break;
	serving = 0;
	fprintf(stderr, "app: shutting down\n");

out:
	if (app.ctx)
		lws_context_destroy(app.ctx);
	app.ctx = NULL;
	sqlite3_close(app.ro);
	sqlite3_close(app.rw);
	if (tmpdir[0]) {
		remove_db_files(db);
		if (rmdir(tmpdir))
			fprintf(stderr, "app: cannot remove %s: %s\n", tmpdir, strerror(errno));
	}
	return rc;
}
