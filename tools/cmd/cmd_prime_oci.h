/* The priming file as a fleet carries it (docs/fleet.md): its identity
 * (`capguard prime info`), an OCI image layout a registry client copies
 * (`capguard prime export|import --oci DIR`, `--prime oci:DIR`), and the
 * check that files merged into one cache are for one program. */
#ifndef CG_CMD_PRIME_OCI_H
#define CG_CMD_PRIME_OCI_H

#include <stddef.h>
#include <stdio.h>

#include "capguard/prime_file.h"

/* `capguard prime export|import|info ...` (argv[0] is the subcommand). */
int cg_cmd_prime_oci(int argc, char **argv);
/* "identity: ..." lines, nothing when id is NULL. */
void cg_prime_print_identity(FILE *out, const cg_prime_identity *id);
/* CG_EXIT_OK when the files (OUT's at out_path, may be NULL, and in[0..n))
 * were learned from one program, else one line saying which differ and
 * CG_EXIT_FINDING: one cache serves one program. */
int cg_prime_merge_identities(const char *out_path, cg_prime_set *const *in, size_t n);
/* For a --prime argument: "oci:DIR" is imported (digests checked) into a
 * file of the cache named by the artifact's digest, whose path goes to out;
 * any other argument is copied as it is. 0, or an exit status (said). */
int cg_prime_resolve_oci(const char *me, const char *arg, char *out, size_t cap);

#endif
