#include "device_arch.h"

#include "driver.h"

unsigned cg_device_arch(void) {
  CUdevice dev;
  int major = 0, minor = 0;
  if (!cg_drv.CtxGetDevice || !cg_drv.DeviceGetAttribute || cg_drv.CtxGetDevice(&dev) != CUDA_SUCCESS)
    return 0;
  if (cg_drv.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) != CUDA_SUCCESS ||
      cg_drv.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) != CUDA_SUCCESS ||
      major <= 0 || minor < 0)
    return 0;
  return (unsigned)(major * 10 + minor);
}
