/* capguard doctor: what this machine has (libcuda, driver version, GPUs),
 * whether the shim loads and sees the driver through each route a real
 * process uses (checked by running capguard-selftest under it), and whether
 * the priming file and the log can be used. Exit 1 when it finds a problem. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <link.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capguard/env_value.h"
#include "capguard/prime_file.h"
#include "env_table.h"
#include "path_check.h"
#include "prime_precheck.h"
#include "cli.h"
#include "commands.h"
#include "frame_source.h"
#include "shim_path.h"
#include "plural.h"

extern char **environ;

static const char ME[] = "capguard doctor";
static const char USAGE[] = "capguard doctor [--prime FILE]";
#define SELFTEST_NAME "capguard-selftest"

typedef struct {
  cg_palette pal;
  int problems;
} doctor;

static void ok(doctor *d, const char *what, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(doctor *d, const char *what, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void problem(doctor *d, const char *what, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#include <stdarg.h>
static void line(doctor *d, const char *mark, const char *colour, const char *what, const char *fmt,
                 va_list ap) {
  printf("  %s%-7s%s %s: ", colour, mark, d->pal.reset, what);
  vprintf(fmt, ap);
  putchar('\n');
}
static void ok(doctor *d, const char *what, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  line(d, "ok", d->pal.green, what, fmt, ap);
  va_end(ap);
}
static void note(doctor *d, const char *what, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  line(d, "note", d->pal.yellow, what, fmt, ap);
  va_end(ap);
}
static void problem(doctor *d, const char *what, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  line(d, "PROBLEM", d->pal.red, what, fmt, ap);
  va_end(ap);
  d->problems++;
}

static void help(void) {
  printf("usage: %s\n\n"
         "Check this machine for capguard:\n"
         "  driver   which libcuda is found (dlopen, honouring LD_LIBRARY_PATH), its version,\n"
         "           whether it refuses module loads during capture (drivers < 12.3 do),\n"
         "           and whether there is a GPU, and its architecture\n"
         "  environment  each CAPGUARD_* value, checked as capguard run checks it\n"
         "  shim     where " CG_SHIM_NAME " is found, whether it loads, and whether it sees\n"
         "           cuModuleLoadData through each route: the exported symbol, dlsym on the\n"
         "           libcuda handle, and the cuGetProcAddress_v2 bootstrap (checked by running\n"
         "           " SELFTEST_NAME " under it)\n"
         "  reports  what reads file:line for native frames (libdw)\n"
         "  files    the priming file's health, its images' architectures, read-only, and\n"
         "           whether it and the log can be written (tried, as capguard run does)\n\n"
         "  --prime FILE   check this priming file instead of the one in effect\n"
         "                 (CAPGUARD_PRIME, else ~/.cache/capguard/prime.cgp)\n\n"
         "Environment: CAPGUARD_SHIM, CAPGUARD_PRIME, CAPGUARD_LOG, and CAPGUARD_LIBCUDA (a\n"
         "library to open instead of libcuda.so.1).\n"
         "Exit status: 0 no problem found, 1 a problem found, 2 usage error.\n",
         USAGE);
}

static const char *libcuda_name(void) {
  const char *l = getenv("CAPGUARD_LIBCUDA");
  return l && *l ? l : "libcuda.so.1";
}

/* ---- driver ---- */
static void check_driver(doctor *d, int *version_out, int *sm_out) {
  printf("%sdriver%s\n", d->pal.bold, d->pal.reset);
  *version_out = 0;
  *sm_out = 0;
  void *h = dlopen(libcuda_name(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    note(d, "libcuda",
         "none found (%s): this machine has no NVIDIA driver, so nothing here can capture CUDA "
         "graphs; capguard run still works but has nothing to guard",
         e ? e : libcuda_name());
    return;
  }
  struct link_map *lm = NULL;
  const char *path = dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name[0] ? lm->l_name
                                                                                : libcuda_name();
  ok(d, "libcuda", "%s", path);
  int (*get_version)(int *) = (int (*)(int *))dlsym(h, "cuDriverGetVersion");
  int v = 0;
  if (!get_version || get_version(&v) != 0 || v <= 0) {
    problem(d, "driver version", "cuDriverGetVersion failed; the driver install looks broken");
  } else {
    *version_out = v;
    ok(d, "driver version", "%d (CUDA %d.%d)", v, v / 1000, (v % 1000) / 10);
    if (v < 12030)
      note(d, "module loads during capture",
           "REFUSED by this driver (older than 12.3): a kernel loaded mid-capture breaks the "
           "capture; run under capguard in guard mode so recorded kernels are loaded before "
           "capture, with the JIT and library options they were made with (the CUDA runtime's "
           "lazy loads included); only a load whose option points into the program's memory "
           "(a symbol table) is never recorded)");
    else
      ok(d, "module loads during capture",
         "allowed by this driver (12.3 or newer); unloads during capture are still refused");
  }
  int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
  int (*count)(int *) = (int (*)(int *))dlsym(h, "cuDeviceGetCount");
  int rc = init ? init(0) : -1, n = 0;
  /* the architecture a priming file's images must be built for (check_files) */
  int (*attribute)(int *, int, int) = (int (*)(int *, int, int))dlsym(h, "cuDeviceGetAttribute");
  int major = 0, minor = 0;
  if (rc == 0 && count && count(&n) == 0 && n > 0 && attribute && attribute(&major, 75, 0) == 0 &&
      attribute(&minor, 76, 0) == 0) { /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, _MINOR */
    *sm_out = major * 10 + minor;
    ok(d, "GPUs", "%d (device 0: sm_%d)", n, *sm_out);
  } else if (rc == 0 && n > 0)
    ok(d, "GPUs", "%d", n);
  else if (rc == 100 || (rc == 0 && n == 0))
    note(d, "GPUs", "none (cuInit: no CUDA-capable device): the driver is installed but this "
                    "machine has no GPU it can use");
  else
    note(d, "GPUs", "cuInit returned %d: the driver cannot use a GPU here", rc);
  /* The handle stays open: unloading a driver library at exit gains nothing. */
}

/* ---- environment: each CAPGUARD_* value as capguard run checks it (env_table.h) ---- */
static void check_env(doctor *d, int version) {
  printf("%senvironment%s\n", d->pal.bold, d->pal.reset);
  size_t set = 0, bad = 0;
  for (size_t i = 0; i < cg_env_n_vars; i++) {
    const char *v = getenv(cg_env_vars[i].name);
    set += v && *v;
    char line[512];
    if (cg_env_bad(&cg_env_vars[i], line, sizeof line) != 0) {
      problem(d, "environment", "%s: the shim would warn and use its default; capguard run "
              "refuses it", line);
      bad++;
    }
  }
  char line[512];
  for (size_t at = 0; cg_env_unknown(&at, line, sizeof line) == 0; bad++)
    problem(d, "environment", "%s: the shim ignores it, as if the setting were unset; capguard run "
            "refuses it", line);
  if (!bad)
    ok(d, "CAPGUARD_*", "%zu set, %s", set, set ? "each one valid" : "every setting its default");
  const char *e = getenv("CAPGUARD_EMULATE_DRIVER");
  int emulate = 0;
  if (e && *e && cg_parse_driver_version(e, &emulate) == 0 && version > 0 && emulate > version)
    note(d, "CAPGUARD_EMULATE_DRIVER", "%d is newer than this driver (%d): emulation only refuses "
         "what an older driver refuses, so it changes nothing here", emulate, version);
}

/* ---- shim and routes ---- */
typedef struct {
  const char *name, *label;
} route_desc;
static const route_desc ROUTES[] = {
    {"exported", "route: exported symbol (dlsym RTLD_DEFAULT, -lcuda)"},
    {"handle", "route: dlsym on the libcuda handle"},
    {"getprocaddress", "route: cuGetProcAddress_v2 bootstrap"},
};

/* Run the self-test under the shim; its stdout (and any warning) into out. Returns its wait status, or -1. */
static int run_selftest(const char *selftest, const char *shim, char *out, size_t cap) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  /* The child's environment: ours, with the shim preloaded and no log to write. */
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = calloc(n + 2, sizeof *env);
  char *preload = NULL;
  const char *old = getenv("LD_PRELOAD");
  if (!env || asprintf(&preload, "LD_PRELOAD=%s%s%s", shim, old && *old ? ":" : "",
                       old && *old ? old : "") < 0) {
    free(env);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "LD_PRELOAD=", 11) && strncmp(environ[i], "CAPGUARD_LOG=", 13))
      env[k++] = environ[i];
  env[k++] = preload;
  env[k] = NULL;
  char *argv[] = {(char *)selftest, NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, selftest, &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  free(preload);
  free(env);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    errno = rc;
    return -1;
  }
  size_t used = 0;
  ssize_t r;
  while ((r = read(fds[0], out + used, cap - 1 - used)) != 0) {
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      break;
    used += (size_t)r;
    if (used == cap - 1) {
      char sink[256]; /* keep reading so the child is not blocked */
      while (read(fds[0], sink, sizeof sink) > 0) {
      }
      break;
    }
  }
  out[used] = '\0';
  close(fds[0]);
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  return status;
}

static const char *field(const char *text, const char *prefix, char *buf, size_t cap) {
  const char *p = text;
  size_t pl = strlen(prefix);
  while (p && *p) {
    if (!strncmp(p, prefix, pl)) {
      const char *e = strchr(p + pl, '\n');
      size_t len = e ? (size_t)(e - p - pl) : strlen(p + pl);
      if (len >= cap)
        len = cap - 1;
      memcpy(buf, p + pl, len);
      buf[len] = '\0';
      return buf;
    }
    p = strchr(p, '\n');
    if (p)
      p++;
  }
  return NULL;
}

static void check_shim(doctor *d) {
  printf("%sshim%s\n", d->pal.bold, d->pal.reset);
  char shim[PATH_MAX], why[PATH_MAX * 2 + 256];
  const char *from = "";
  if (cg_find_shim_from(shim, sizeof shim, why, sizeof why, &from) != 0) {
    problem(d, CG_SHIM_NAME, "%s", why);
    return;
  }
  char dir[PATH_MAX], selftest[PATH_MAX + 32];
  if (cg_exe_dir(dir, sizeof dir) != 0 ||
      (size_t)snprintf(selftest, sizeof selftest, "%s/" SELFTEST_NAME, dir) >= sizeof selftest ||
      access(selftest, X_OK) != 0) {
    problem(d, CG_SHIM_NAME, "found at %s, but " SELFTEST_NAME
                             " is missing next to capguard, so it cannot be checked; reinstall",
            shim);
    return;
  }
  static char out[16384];
  int st = run_selftest(selftest, shim, out, sizeof out);
  if (st < 0) {
    problem(d, CG_SHIM_NAME, "cannot run %s: %s", selftest, strerror(errno));
    return;
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    char first[256] = "";
    sscanf(out, "%255[^\n]", first);
    if (WIFSIGNALED(st))
      problem(d, CG_SHIM_NAME, "%s: the self-test died of signal %d under it (%s); report a bug",
              shim, WTERMSIG(st), first[0] ? first : "no output");
    else
      problem(d, CG_SHIM_NAME, "%s: the self-test exited %d under it (%s)", shim,
              WIFEXITED(st) ? WEXITSTATUS(st) : -1, first[0] ? first : "no output");
    return;
  }
  char buf[PATH_MAX + 64];
  const char *loaded = field(out, "shim loaded ", buf, sizeof buf);
  if (!loaded) {
    problem(d, CG_SHIM_NAME, "%s did not load into the self-test (is it a valid shared library "
                             "for this machine?)", shim);
    return;
  }
  ok(d, CG_SHIM_NAME, "%s loads (%s)", loaded, from);
  char cuda[PATH_MAX + 64];
  const char *lib = field(out, "libcuda ", cuda, sizeof cuda);
  bool no_cuda = lib && !strncmp(lib, "none ", 5);
  for (size_t r = 0; r < sizeof ROUTES / sizeof ROUTES[0]; r++) {
    char prefix[64], val[PATH_MAX + 64];
    snprintf(prefix, sizeof prefix, "route %s ", ROUTES[r].name);
    const char *v = field(out, prefix, val, sizeof val);
    if (!v)
      problem(d, ROUTES[r].label, "the self-test did not report it");
    else if (!strncmp(v, "interposed ", 11))
      ok(d, ROUTES[r].label, "seen by the shim");
    else if (no_cuda)
      note(d, ROUTES[r].label, "not checked: there is no libcuda to resolve it in");
    else if (!strncmp(v, "direct ", 7))
      problem(d, ROUTES[r].label,
              "NOT seen by the shim: resolves to %s, so calls made this way escape capguard", v + 7);
    else
      problem(d, ROUTES[r].label, "could not be resolved: %s", v);
  }
}

/* ---- reports ---- */
static void check_reports(doctor *d) {
  printf("%sreports%s\n", d->pal.bold, d->pal.reset);
  ok(d, "native frames", "file:line read by %s", cgl_frame_source_reader());
}

/* ---- files ---- */
/* Whether path can be created or appended to: the file if it exists, else
 * the nearest existing directory above it (create_dirs: missing directories
 * in between would be created; else its own directory must exist). */
typedef struct {
  char text[1024];
  size_t n;
} warnings;
static void collect(void *ctx, const char *l) {
  warnings *w = ctx;
  if (w->n++ == 0)
    snprintf(w->text, sizeof w->text, "%s", l);
}

/* " (sm_80, sm_90)": the architectures the file's images are built for. */
static void arch_list(const cg_prime_set *set, char *buf, size_t cap) {
  unsigned seen[16];
  size_t n = 0, used = 0;
  buf[0] = '\0';
  for (size_t i = 0; set && i < cg_prime_count(set); i++) {
    unsigned a = cg_prime_get(set, i)->sm_arch;
    bool dup = !a;
    for (size_t k = 0; k < n && !dup; k++)
      dup = seen[k] == a;
    if (dup || n == sizeof seen / sizeof seen[0])
      continue;
    seen[n++] = a;
    int w = snprintf(buf + used, cap - used, "%ssm_%u", used ? ", " : " (", a);
    if (w < 0 || (size_t)w >= cap - used - 1)
      break;
    used += (size_t)w;
  }
  if (used)
    snprintf(buf + used, cap - used, ")");
}

/* A read-only file serves only what it holds, and only images built for
 * this GPU's architecture: said, with both architectures. */
static void check_prime_arch(doctor *d, const cg_prime_set *set, int sm, bool readonly) {
  size_t n = set ? cg_prime_count(set) : 0, other = 0;
  unsigned other_sm = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned a = cg_prime_get(set, i)->sm_arch;
    if (sm && a && a != (unsigned)sm) {
      other++;
      other_sm = a;
    }
  }
  if (!other)
    return;
  if (other == n && readonly)
    problem(d, "priming file", "%s built for sm_%u, this GPU is sm_%d: nothing can be served, and "
            "CAPGUARD_PRIME_READONLY=1 keeps anything from being recorded; learn a file on an sm_%d "
            "machine (capguard prime learn)", n == 1 ? "its one image is" : "all its images are",
            other_sm, sm, sm);
  else
    note(d, "priming file", "%zu of %zu image%s built for another architecture (sm_%u; this GPU "
         "is sm_%d): not served here", other, n, cg_plural(n), other_sm, sm);
}

/* What the file says it is for (its identity record), against this
 * machine: the driver it was learned on and the format of the capguard that
 * wrote it. The arch of each image is check_prime_arch's. */
static void check_prime_identity(doctor *d, const cg_prime_set *set, int sm, int driver) {
  const cg_prime_identity *id = cg_prime_identity_of(set);
  if (!set)
    return;
  if (!id) {
    note(d, "priming file", "no identity (learned before capguard wrote one): capguard prime learn "
                            "--label writes it");
    return;
  }
  ok(d, "priming file", "identity: learned from %s on driver %u%s, sm_%u, format %u%s%s",
     id->program[0] ? id->program : "(unnamed program)", id->driver_version,
     driver > 0 && (unsigned)driver == id->driver_version ? " (this driver)" : "", id->device_sm,
     id->format_version, id->label[0] ? ", label " : "", id->label);
  if (driver > 0 && id->driver_version && (unsigned)driver != id->driver_version)
    note(d, "priming file", "learned on driver %u, this one is %d: images are served by their bytes and "
         "architecture, whatever the driver", id->driver_version, driver);
  if (sm > 0 && id->device_sm && (unsigned)sm != id->device_sm)
    note(d, "priming file", "learned on an sm_%u GPU, this one is sm_%d", id->device_sm, sm);
  if (id->format_version > cg_prime_format_version())
    note(d, "priming file", "written by a newer capguard (format %u; this one knows %u): the records "
         "this capguard knows are served", id->format_version, cg_prime_format_version());
}

static void check_files(doctor *d, const char *named, int sm, int driver) {
  bool readonly = cg_env_true("CAPGUARD_PRIME_READONLY");
  printf("%sfiles%s\n", d->pal.bold, d->pal.reset);
  char path[PATH_MAX], why[PATH_MAX + 512];
  if (named) {
    snprintf(path, sizeof path, "%s", named);
  } else if (cg_cli_prime_default(path, sizeof path) != 0) {
    problem(d, "priming file", "no location: HOME is not set; set CAPGUARD_PRIME=/path/to/prime.cgp");
    path[0] = '\0';
  }
  if (path[0]) {
    cg_prime_set *set = NULL;
    size_t damaged = 0;
    /* the same words capguard run and prime learn/check say before a run */
    cg_precheck pc = cg_prime_precheck(path, why, sizeof why, &damaged);
    if (pc == CG_PRECHECK_BAD) {
      problem(d, "priming file", "%s %s", path, why);
    } else if (pc == CG_PRECHECK_MISSING && named) {
      /* and where capguard run --prime would refuse it, why (a read-only filesystem...) */
      if (cg_prime_usable(path, true, readonly, why, sizeof why) != 0)
        problem(d, "priming file", "%s %s", path, why);
      else
        problem(d, "priming file", "%s does not exist (check the path)", path);
    } else {
      warnings w = {{0}, 0};
      if (pc == CG_PRECHECK_OK && cg_prime_load(path, &set, collect, &w) != 0)
        set = NULL;
      size_t n = set ? cg_prime_count(set) : 0;
      if (pc == CG_PRECHECK_MISSING && readonly)
        problem(d, "priming file", "%s does not exist, and CAPGUARD_PRIME_READONLY=1 keeps the shim "
                "from creating it: nothing is served or recorded; point CAPGUARD_PRIME at the "
                "fleet's file, or unset CAPGUARD_PRIME_READONLY", path);
      else if (pc == CG_PRECHECK_MISSING)
        ok(d, "priming file", "%s: not created yet (the first run in guard mode creates it)", path);
      else {
        char archs[160];
        arch_list(set, archs, sizeof archs);
        ok(d, "priming file", "%s: %zu image%s%s%s%s", path, n, cg_plural(n), archs,
           damaged ? "" : ", intact", readonly ? ", read-only (CAPGUARD_PRIME_READONLY=1)" : "");
      }
      if (pc == CG_PRECHECK_OK)
        note(d, "priming file", "to change it while programs run, replace it by rename (write the new "
                                "file beside it, then mv it over it), never in place (cp over it, "
                                "truncate): capguard prime does so");
      if (damaged)
        note(d, "priming file", "%zu damaged record%s skipped (first: %s)", damaged,
             cg_plural(damaged), w.text);
      if (readonly && pc == CG_PRECHECK_OK)
        note(d, "priming file", "read-only (CAPGUARD_PRIME_READONLY=1): its images are served, "
             "and an image it lacks breaks the capture each run, never recorded");
      check_prime_identity(d, set, sm, driver);
      check_prime_arch(d, set, sm, readonly);
      if (!(pc == CG_PRECHECK_MISSING && readonly) && cg_prime_usable(path, named, readonly, why, sizeof why) != 0)
        problem(d, "priming file", "%s %s", path, why);
    }
    cg_prime_free(set);
  }
  const char *env_prime = getenv("CAPGUARD_PRIME");
  if (!named && !(env_prime && *env_prime) && path[0]) {
    char *slash = strrchr(path, '/');
    if (slash)
      *slash = '\0';
    note(d, "priming file", "the shim alone uses the file above; capguard run, given no --prime, "
                            "uses one per program, %s/prime.d/PROGRAM.cgp (capguard doctor --prime "
                            "FILE checks one)", path);
  }
  const char *log = getenv("CAPGUARD_LOG");
  if (!log || !*log)
    note(d, "log", "CAPGUARD_LOG is not set (capguard run uses a temporary log unless --log is given)");
  else if (cg_log_usable(log, why, sizeof why) != 0)
    problem(d, "log", "%s %s%s", log, why, strstr(why, "%q{") ? "" : "; point CAPGUARD_LOG at a writable file");
  else
    ok(d, "log", "%s is writable", log);
}

int cg_cmd_doctor(int argc, char **argv) {
  static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
                                       {"prime", required_argument, NULL, 'p'},
                                       {NULL, 0, NULL, 0}};
  const char *prime = NULL;
  int c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    if (c == 'h') {
      help();
      return CG_EXIT_OK;
    }
    if (c == 'p' && *optarg) {
      prime = optarg;
      continue;
    }
    if (c == 'p' || c == ':')
      return cg_usage_error(ME, USAGE, "--prime needs a file name");
    return cg_usage_error(ME, USAGE, "unknown option '%s'", argv[optind - 1]);
  }
  if (optind < argc)
    return cg_usage_error(ME, USAGE, "unexpected argument '%s'", argv[optind]);
  doctor d = {cg_palette_for(stdout), 0};
  printf("capguard %s doctor\n", CAPGUARD_VERSION);
  int version, sm;
  check_driver(&d, &version, &sm);
  check_env(&d, version);
  check_shim(&d);
  check_reports(&d);
  check_files(&d, prime, sm, version);
  if (d.problems)
    printf("%s%d problem%s found%s\n", d.pal.red, d.problems, cg_plural(d.problems),
           d.pal.reset);
  else
    printf("%sno problem found%s\n", d.pal.green, d.pal.reset);
  return d.problems ? CG_EXIT_FINDING : CG_EXIT_OK;
}
