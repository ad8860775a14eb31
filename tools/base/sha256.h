/* SHA-256 (FIPS 180-4): the digest an OCI image layout names its blobs by
 * (docs/fleet.md). Written here, not linked: the command links no crypto
 * library, and the shim never needs one. */
#ifndef CG_SHA256_H
#define CG_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint32_t h[8];
  uint64_t bytes;
  uint8_t block[64];
  size_t used;
} cg_sha256;

void cg_sha256_init(cg_sha256 *c);
void cg_sha256_add(cg_sha256 *c, const void *data, size_t n);
/* 64 lowercase hex digits and a NUL. */
void cg_sha256_hex(cg_sha256 *c, char out[65]);
void cg_sha256_of(const void *data, size_t n, char out[65]);

#endif
