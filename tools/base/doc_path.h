/* Where the docs the command cites are on this machine: installed beside the
 * command (a wheel: capguard/share/ in the package; a meson install: the
 * prefix's share/), else the source tree's docs/, as a checkout has them. */
#ifndef CAPGUARD_DOC_PATH_H
#define CAPGUARD_DOC_PATH_H

#include <stddef.h>

/* name: "trace.md". The installed doc's path when it is there
 * (<bin>/../share/doc/capguard/NAME), else "docs/NAME". */
const char *cg_doc_path(const char *name, char *buf, size_t cap);
/* The man page: "man capguard" when man finds it on its own (installed into
 * a prefix), "man <bin>/../share/man/man1/capguard.1" when it lies beside the
 * command (a wheel in a venv), else "man docs/capguard.1". */
const char *cg_man_command(char *buf, size_t cap);

#endif
