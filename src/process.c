#include "dt.h"
void dt_process_open(lua_State *L) { (void)L; }
