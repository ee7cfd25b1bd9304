/* runtime.c - STUB (replaced by the harness work): no fix applied. */
#include "runtime.h"
#include <stddef.h>
int runtime_fix(const char *krelease, char **dir_out) { (void)krelease; *dir_out = NULL; return 0; }
