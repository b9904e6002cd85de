/* base64.c - core.base64.decode: the base64 text CDP uses for binary data
 * (screenshots, response bodies) turned into bytes.
 *
 * In C because the sizes are large and the work is all ours: a full-page
 * screenshot is tens of MB of base64, and the plain Lua decoder it replaces
 * took 0.78 s per 10 MB on Lua 5.4 (more on LuaJIT, whose JIT the library
 * keeps off on the builds of 2021-22), outside any deadline and, in Neovim,
 * with the editor frozen. Depends on: dt.h (registration) only. */
#include <string.h>

#include "dt.h"

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* core.base64.decode(text) -> bytes | nil, message
 * The standard alphabet with "=" padding, which may only end the text. CR
 * and LF are ignored wherever they are (line-wrapped base64); any other
 * byte outside the alphabet, or a length (without them) that is not a
 * multiple of 4, fails, naming a 1-based position in the text without line
 * breaks: the group's first byte when one of its first two is wrong, else
 * the byte at fault (for a bad length, the length). */
static int l_base64_decode(lua_State *L)
{
	size_t len, n, i, k = 0;
	const unsigned char *s = (const unsigned char *)luaL_checklstring(L, 1, &len);
	unsigned char *out;
	signed char val[256];
	size_t bad = 0;

	memset(val, -1, sizeof val);
	for (i = 0; i < sizeof alphabet - 1; i++)
		val[(unsigned char)alphabet[i]] = (signed char)i;

	if (memchr(s, '\r', len) != NULL || memchr(s, '\n', len) != NULL) {
		unsigned char *t = lua_newuserdata(L, len > 0 ? len : 1);  /* ... text' */
		for (i = n = 0; i < len; i++)
			if (s[i] != '\r' && s[i] != '\n')
				t[n++] = s[i];
		s = t;
		len = n;
	}
	n = len;
	if (n % 4 != 0)
		bad = n;
	out = lua_newuserdata(L, n / 4 * 3 + 1);        /* ... out */
	for (i = 0; bad == 0 && i < n; i += 4) {
		int v1 = val[s[i]], v2 = val[s[i + 1]], v3 = val[s[i + 2]], v4 = val[s[i + 3]];
		unsigned long x;
		if (v1 < 0 || v2 < 0) {
			bad = i + 1;
			break;
		}
		x = (unsigned long)v1 << 18 | (unsigned long)v2 << 12;
		if (v4 >= 0) {
			if (v3 < 0) {
				bad = i + 3;
				break;
			}
			x |= (unsigned long)v3 << 6 | (unsigned long)v4;
			out[k++] = (unsigned char)(x >> 16);
			out[k++] = (unsigned char)(x >> 8);
			out[k++] = (unsigned char)x;
		} else if (s[i + 3] == '=' && i + 4 == n) {     /* padding, only at the end */
			if (v3 >= 0) {
				x |= (unsigned long)v3 << 6;
				out[k++] = (unsigned char)(x >> 16);
				out[k++] = (unsigned char)(x >> 8);
			} else if (s[i + 2] == '=') {
				out[k++] = (unsigned char)(x >> 16);
			} else {
				bad = i + 3;
				break;
			}
		} else {
			bad = i + 4;
			break;
		}
	}
	if (bad > 0) {
		lua_pushnil(L);
		lua_pushfstring(L, "not base64 text at byte %d", (int)bad);
		return 2;
	}
	lua_pushlstring(L, (const char *)out, k);       /* ... out bytes */
	return 1;
}

void dt_base64_open(lua_State *L)
{
	static const luaL_Reg funcs[] = {
		{"decode", l_base64_decode},
		{NULL, NULL}
	};
	dt_open_part(L, "base64", funcs);
}
