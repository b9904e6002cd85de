/* fs.h - removing a directory tree. Depends on: base.h. Used by: process.c. */
#ifndef DT_FS_H
#define DT_FS_H

#include "base.h"

int dt_rmtree(const char *path);      /* 0 ok, -1 with errno */

#endif
