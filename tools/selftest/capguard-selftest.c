/* capguard-selftest: run by `capguard doctor` with the shim preloaded. It
 * obtains cuModuleLoadData through each route a real process uses and says,
 * for each, whether the pointer lies in libcapguard.so (dladdr), i.e. whether
 * the shim sees calls made that way. It calls no CUDA function except
 * cuGetProcAddress, so it works without a GPU.
 *
 * Output, one fact a line, for the doctor to parse:
 *   shim loaded PATH | shim absent -
 *   libcuda PATH | libcuda none DLERROR
 *   route exported|handle|getprocaddress interposed|direct|missing WHERE-OR-WHY
 */
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*gpa_fn)(const char *symbol, void **pfn, int version, unsigned long long flags,
                      int *status);

static int find_shim(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  const char *name = info->dlpi_name, *slash = name ? strrchr(name, '/') : NULL;
  const char *base = slash ? slash + 1 : name;
  if (base && !strncmp(base, "libcapguard", 11)) {
    *(const char **)data = name;
    return 1;
  }
  return 0;
}

static void route(const char *name, void *p, const char *why) {
  if (!p) {
    printf("route %s missing %s\n", name, why && *why ? why : "-");
    return;
  }
  Dl_info info;
  const char *where = dladdr(p, &info) && info.dli_fname ? info.dli_fname : "?";
  const char *slash = strrchr(where, '/');
  bool mine = !strncmp(slash ? slash + 1 : where, "libcapguard", 11);
  printf("route %s %s %s\n", name, mine ? "interposed" : "direct", where);
}

int main(void) {
  const char *shim = NULL;
  dl_iterate_phdr(find_shim, &shim);
  printf("shim %s %s\n", shim ? "loaded" : "absent", shim ? shim : "-");

  const char *lib = getenv("CAPGUARD_LIBCUDA");
  if (!lib || !*lib)
    lib = "libcuda.so.1";
  /* RTLD_GLOBAL: like a program linked against libcuda, whose symbols are then in the global scope. */
  void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    const char *e = dlerror();
    printf("libcuda none %s\n", e ? e : "?");
  } else {
    struct link_map *lm = NULL;
    printf("libcuda %s\n", dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm ? lm->l_name : lib);
  }

  /* (1) the exported symbol, as a program linked with -lcuda resolves it */
  route("exported", dlsym(RTLD_DEFAULT, "cuModuleLoadData"), "no cuModuleLoadData in the process");
  if (!h) {
    route("handle", NULL, "no libcuda");
    route("getprocaddress", NULL, "no libcuda");
    return 0;
  }
  /* (2) dlsym on the libcuda handle, as torch's driver table does */
  route("handle", dlsym(h, "cuModuleLoadData"), "libcuda has no cuModuleLoadData");

  /* (3) the cudart bootstrap: cuGetProcAddress_v2 -> "cuGetProcAddress" (12000) -> the entry point */
  gpa_fn boot = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
  if (!boot) {
    route("getprocaddress", NULL, "libcuda has no cuGetProcAddress_v2 (driver older than 12.0)");
    return 0;
  }
  void *gpa = NULL, *fn = NULL;
  int status = 0;
  int rc = boot("cuGetProcAddress", &gpa, 12000, 0, &status);
  if (rc != 0 || !gpa) {
    char why[96];
    snprintf(why, sizeof why, "cuGetProcAddress_v2(\"cuGetProcAddress\")=%d", rc);
    route("getprocaddress", NULL, why);
    return 0;
  }
  rc = ((gpa_fn)gpa)("cuModuleLoadData", &fn, 12000, 0, &status);
  if (rc != 0 || !fn) {
    char why[96];
    snprintf(why, sizeof why, "cuGetProcAddress(\"cuModuleLoadData\")=%d", rc);
    route("getprocaddress", NULL, why);
    return 0;
  }
  route("getprocaddress", fn, NULL);
  return 0;
}
