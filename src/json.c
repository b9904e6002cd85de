/* json.c - placeholder, filled in by its own change. */
#include "dt.h"

void dt_json_open(lua_State *L)
{
	(void)L;
}

int dt_json_decode(lua_State *L, const char *s, size_t len, int max_depth,
                   char *err, size_t errsz)
{
	(void)L; (void)s; (void)len; (void)max_depth;
	if (errsz > 0)
		err[0] = '\0';
	return 0;
}
