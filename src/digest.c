/* digest.c - core.digest.sha256: the SHA-256 of a string, in hex.
 *
 * A trace keeps a value over its size limit as its digest and size
 * (lua/devtools_tools/trace/): megabytes a call returned, hashed once as
 * they are written and again when a replay compares. In C because the
 * library's Lua runs on LuaJIT too, where it may use no bitwise operators,
 * and because OpenSSL, which the core links for TLS already, does it at
 * memory speed. Depends on: dt.h (registration), codes.c. */
#include <openssl/evp.h>

#include "dt.h"

/* core.digest.sha256(bytes) -> 64 lowercase hex digits | nil, message, code */
static int l_sha256(lua_State *L)
{
	static const char hex[] = "0123456789abcdef";
	size_t len;
	const char *s = luaL_checklstring(L, 1, &len);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0, i;
	char out[2 * EVP_MAX_MD_SIZE];
	if (EVP_Digest(s, len, md, &n, EVP_sha256(), NULL) != 1)
		return dt_push_fail(L, DT_ESYSTEM, "sha256: the digest failed");
	for (i = 0; i < n; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	lua_pushlstring(L, out, 2 * (size_t)n);
	return 1;
}

void dt_digest_open(lua_State *L)
{
	static const luaL_Reg funcs[] = {
		{"sha256", l_sha256},
		{NULL, NULL}
	};
	dt_open_part(L, "digest", funcs);
}
