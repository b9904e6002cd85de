#include "dt.h"
void dt_transport_open(lua_State *L) { (void)L; }
