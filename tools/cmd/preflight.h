/* What capguard run, prime learn and prime check refuse before anything
 * starts, each as doctor would flag it: a command that cannot be run (the
 * shell's status: 127 not found, 126 found but not runnable), and a
 * CAPGUARD_* name that neither the shim nor the command reads. */
#ifndef CAPGUARD_PREFLIGHT_H
#define CAPGUARD_PREFLIGHT_H

/* 0 when argv0 names a program execvp would run (a path, or a name found in
 * PATH); else the shell's status, said in one line for me. */
int cg_preflight_command(const char *me, const char *argv0);

/* 0, or the usage error's status after saying the first unknown name. */
int cg_preflight_env_names(const char *me);

#endif
