/* The architecture of the current context's device (90: sm_90), from two
 * attribute queries the driver allows during capture; 0 when unknown (no
 * context, a driver without them). */
#ifndef CAPGUARD_DEVICE_ARCH_H
#define CAPGUARD_DEVICE_ARCH_H

unsigned cg_device_arch(void);

#endif
