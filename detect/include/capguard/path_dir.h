/* A path's directory, and making it: for the log, the priming file and the
 * command's checks of both, which each needed them. */
#ifndef CAPGUARD_PATH_DIR_H
#define CAPGUARD_PATH_DIR_H

#include <stddef.h>

/* path's directory part into dir (cap bytes): "." when path has none, "/"
 * for a file at the root. dir may be path itself. */
void cg_path_dir(const char *path, char *dir, size_t cap);

/* mkdir -p of path's directory, each level it makes mode 0700 (the log's and
 * the priming file's directories are the user's alone); 0, or -1 with errno
 * when a level cannot be made. */
int cg_make_parent(const char *path);

#endif
