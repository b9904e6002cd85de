/* json.h - the JSON codec, for the C code that decodes wire bytes.
 * Depends on: base.h. Used by: cdp_decode.c. */
#ifndef DT_JSON_H
#define DT_JSON_H

#include "base.h"

#define DT_JSON_MAX_DEPTH 1000

/* A string to set aside rather than make a Lua string of: the one at
 * path[0].path[1].path[2] from the top level, when the top-level member
 * gate_key comes before it and its value is a key with a true value in
 * the table at stack index gate. Its text is unescaped into a userdata
 * and decoded as JSON afterwards (dt_json_decode_aside).
 *
 * A number as that value is the deadline (dt_now's clock) of whoever
 * wants the text: from the gate member on, the decoder reads the clock
 * every DT_JSON_CLOCK_STEP bytes and gives up with DT_ETIMEOUT once it has
 * passed, and so does dt_json_decode_aside. The decoder fills in the
 * last two fields. */
typedef struct dt_json_aside {
	const char *gate_key;
	int gate;                   /* stack index of the table of wanted values */
	const char *path[3];
	int deadlines;              /* 0, or the stack index of a table whose number
	                             * for the gate value is a deadline, when the
	                             * gate table gives none (the string is not
	                             * set aside for it) */
	lua_Number gate_value;      /* out: its value, when it matched */
	double deadline;            /* out: the gate table's number for it, or -1 */
} dt_json_aside;

#define DT_JSON_CLOCK_STEP ((size_t)1 << 18)

/* Decodes s[0..len) and pushes the value; returns 1. With aside and the
 * string found: pushes the value, the table lacking path[2] and the text,
 * and returns 3. On failure pushes nothing, writes a message to err, sets
 * *code (DT_ESYNTAX, DT_ETOODEEP, DT_ENOMEM, or DT_ETIMEOUT past deadline
 * or the aside's) and returns 0. deadline: dt_now's clock, read every
 * DT_JSON_CLOCK_STEP bytes (-1: none). The text does not point into s, so
 * s may go before dt_json_decode_aside. */
int dt_json_decode(lua_State *L, const char *s, size_t len, int max_depth,
                   dt_json_aside *aside, double deadline, char *err, size_t errsz,
                   int *code);
/* Stack: table text. Decodes the text into table.json, or on failure sets
 * table.json_error to why it is not JSON; gives back the text's pages as
 * it goes and pops both. Returns DT_OK, or DT_ETIMEOUT (table left without
 * either field, err written) when the clock passes deadline (-1: none)
 * first. */
int dt_json_decode_aside(lua_State *L, double deadline, char *err, size_t errsz);

#endif
