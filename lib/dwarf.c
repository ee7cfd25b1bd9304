/* dwarf.c - STUB (replaced by the DWARF work): every query fails. */
#include "dwarf.h"
#include "error.h"
#include <stdlib.h>
struct dw_set { int unused; };
struct dw_set *dw_set_new(void) { return xcalloc(1, sizeof(struct dw_set)); }
void dw_set_free(struct dw_set *set) { free(set); }
int dw_set_add(struct dw_set *set, const char *path) { (void)set; (void)path; return 0; }
int dw_sizeof(struct dw_set *s, const char *t, const char *m, long long *o) { (void)s; (void)t; (void)m; (void)o; return error("DWARF resolution not implemented yet"); }
int dw_offsetof(struct dw_set *s, const char *t, const char *mem, const char *m, long long *o) { (void)s; (void)t; (void)mem; (void)m; (void)o; return error("DWARF resolution not implemented yet"); }
int dw_has_member(struct dw_set *s, const char *t, const char *mem, const char *m, int *o) { (void)s; (void)t; (void)mem; (void)m; (void)o; return error("DWARF resolution not implemented yet"); }
int dw_has_type(struct dw_set *s, const char *t, const char *m, int *o) { (void)s; (void)t; (void)m; (void)o; return error("DWARF resolution not implemented yet"); }
int dw_enum(struct dw_set *s, const char *n, const char *m, long long *o) { (void)s; (void)n; (void)m; (void)o; return error("DWARF resolution not implemented yet"); }
int dw_find_var(struct dw_set *s, const char *sym, const char *m, const char **mo, const char **cu) { (void)s; (void)sym; (void)m; (void)mo; (void)cu; return error("DWARF resolution not implemented yet"); }
