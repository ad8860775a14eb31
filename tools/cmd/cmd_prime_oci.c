/* The priming file as an OCI artifact (docs/fleet.md, "The kernel cache for
 * a fleet"). An OCI image layout (the directory `skopeo copy oci:DIR ...`
 * reads and writes): oci-layout, index.json and blobs/sha256/, holding a
 * manifest whose one layer is the priming file, byte for byte, and whose
 * config is its identity in JSON; the identity again as the manifest's
 * annotations, for registries and dashboards that show only those. Every
 * blob read is checked against its digest and size before it is used: a
 * registry, a cache agent or a volume in between can change bytes. */
#include "cmd_prime_oci.h"
#include "capguard/char_class.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "plural.h"
#include "sha256.h"

#define MEDIA_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MEDIA_INDEX "application/vnd.oci.image.index.v1+json"
#define MEDIA_CONFIG "application/vnd.capguard.prime.config.v1+json"
#define MEDIA_LAYER "application/vnd.capguard.prime.v1"
#define JSON_MAX ((size_t)4 << 20)      /* index, manifest, config */
#define LAYER_MAX ((uint64_t)16 << 30)  /* a priming file: CAPGUARD_PRIME_MAX is far below */

static const char ME[] = "capguard prime";

/* ---- files ---- */

/* The whole of path, at most max bytes: 0, or -1 with *why set. */
static int read_all(const char *path, uint64_t max, uint8_t **out, size_t *len, const char **why) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *why = fd < 0 ? strerror(errno) : "not a regular file";
    if (fd >= 0) close(fd);
    return -1;
  }
  if ((uint64_t)st.st_size > max) {
    close(fd);
    *why = "larger than any such file can be";
    return -1;
  }
  uint8_t *b = malloc((size_t)st.st_size + 1);
  size_t got = 0;
  while (b && got < (size_t)st.st_size) {
    ssize_t r = read(fd, b + got, (size_t)st.st_size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (!b || got != (size_t)st.st_size) {
    free(b);
    *why = b ? "it changed while being read" : "out of memory";
    return -1;
  }
  b[got] = 0;
  *out = b;
  *len = got;
  return 0;
}

/* path replaced whole: a temporary file beside it, then rename, so a reader
 * (a running program's shim) sees the old file or the new, never a part. */
static int write_all(const char *path, const void *data, size_t len, mode_t mode) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) return -1;
  size_t done = 0;
  while (done < len) {
    ssize_t w = write(fd, (const uint8_t *)data + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += (size_t)w;
  }
  int err = done == len && fchmod(fd, mode) == 0 && fsync(fd) == 0 ? 0 : (errno ? errno : EIO);
  close(fd);
  if (!err && rename(tmp, path) != 0) err = errno;
  if (err) {
    unlink(tmp);
    errno = err;
    return -1;
  }
  return 0;
}

/* ---- identity ---- */

static void quiet_line(void *ctx, const char *line) { (void)ctx, (void)line; }

/* Warnings counted, the first kept: a file with damage is not shipped. */
typedef struct {
  size_t n;
  char first[512];
} warn_count;

static void count_line(void *ctx, const char *line) {
  warn_count *w = ctx;
  if (!w->n++) snprintf(w->first, sizeof w->first, "%s", line);
}

/* "sm_80,sm_90": the architectures of the set's images, each once, in order. */
static void arch_list(const cg_prime_set *s, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = 0;
  for (size_t i = 0; i < cg_prime_count(s); i++) {
    unsigned a = cg_prime_get(s, i)->sm_arch;
    bool seen = !a;
    for (size_t k = 0; k < i && !seen; k++) seen = cg_prime_get(s, k)->sm_arch == a;
    if (seen) continue;
    int w = snprintf(buf + used, cap - used, "%ssm_%u", used ? "," : "", a);
    if (w < 0 || (size_t)w >= cap - used) break;
    used += (size_t)w;
  }
}

void cg_prime_print_identity(FILE *out, const cg_prime_identity *id) {
  if (!id) return;
  fprintf(out, "identity: program %s, learned on driver %u (CUDA %u.%u), sm_%u; format %u%s%s\n",
          id->program[0] ? id->program : "(not named)", id->driver_version, id->driver_version / 1000,
          id->driver_version % 1000 / 10, id->device_sm, id->format_version, id->label[0] ? "; label " : "",
          id->label);
}

int cg_prime_merge_identities(const char *out_path, cg_prime_set *const *in, size_t n) {
  cg_prime_set *out = NULL;
  if (out_path && cg_prime_load(out_path, &out, quiet_line, NULL) != 0) out = NULL;
  const cg_prime_identity *first = cg_prime_identity_of(out);
  const char *first_name = out_path;
  int rc = CG_EXIT_OK;
  for (size_t i = 0; i < n && rc == CG_EXIT_OK; i++) {
    const cg_prime_identity *id = cg_prime_identity_of(in[i]);
    if (!id || !id->program[0]) continue;
    if (!first || !first->program[0]) {
      first = id;
      first_name = NULL;
      continue;
    }
    if (strcmp(first->program, id->program) != 0) {
      fprintf(stderr,
              "%s: merge: the files were learned from different programs (%s%s%s, %s): one cache "
              "serves one program; merge the files of each program apart\n",
              ME, first->program, first_name ? " in " : "", first_name ? first_name : "", id->program);
      rc = CG_EXIT_FINDING;
    }
  }
  cg_prime_free(out);
  return rc;
}

/* ---- export ---- */

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", ME);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return CG_EXIT_FINDING;
}

/* Writes data as DIR/blobs/sha256/<digest>; its "sha256:..." into digest. */
static int put_blob(const char *dir, const void *data, size_t len, char digest[72]) {
  char hex[65], path[PATH_MAX];
  cg_sha256_of(data, len, hex);
  snprintf(digest, 72, "sha256:%s", hex);
  if (snprintf(path, sizeof path, "%s/blobs/sha256/%s", dir, hex) >= (int)sizeof path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  return write_all(path, data, len, 0644);
}

static int make_dirs(const char *dir) {
  char p[PATH_MAX];
  const char *parts[] = {"", "/blobs", "/blobs/sha256"};
  for (size_t i = 0; i < 3; i++) {
    if (snprintf(p, sizeof p, "%s%s", dir, parts[i]) >= (int)sizeof p) return -1;
    if (mkdir(p, 0755) != 0 && errno != EEXIST) return -1;
  }
  return 0;
}

/* RFC 3339 in UTC, as org.opencontainers.image.created asks. */
static void rfc3339(uint64_t ns, char out[32]) {
  time_t t = (time_t)(ns / 1000000000u);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A JSON string of s: as it is when it is UTF-8 (a label may be in any
 * language), else with every byte outside printable ASCII as '?' (a
 * program's name is whatever bytes its command line held). */
static json_t *text(const char *s) {
  json_t *j = json_string(s);
  if (j) return j;
  char safe[CG_PRIME_LABEL_MAX];
  size_t i = 0;
  for (; s[i] && i < sizeof safe - 1; i++) safe[i] = (unsigned char)s[i] < 0x80 && !cg_is_control((unsigned char)s[i]) ? s[i] : '?';
  safe[i] = 0;
  return json_string(safe);
}

/* The identity as the config blob (and the annotations) say it. */
static json_t *identity_json(const cg_prime_set *s, bool annotations) {
  const cg_prime_identity *id = cg_prime_identity_of(s);
  cg_prime_identity none = {.format_version = cg_prime_format_version()};
  if (!id) id = &none;
  char archs[512], created[32], num[3][16];
  arch_list(s, archs, sizeof archs);
  rfc3339(id->written_ns, created);
  snprintf(num[0], sizeof num[0], "%u", id->format_version);
  snprintf(num[1], sizeof num[1], "%u", id->driver_version);
  snprintf(num[2], sizeof num[2], "%zu", cg_prime_count(s));
  if (annotations)
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:s}", "org.opencontainers.image.title",
                     "capguard priming file", "org.opencontainers.image.description",
                     "CUDA module images preloaded before graph capture (capguard)",
                     "org.opencontainers.image.created", created, "capguard.prime.format", num[0],
                     "capguard.prime.driver", num[1], "capguard.prime.archs", archs, "capguard.prime.program",
                     text(id->program), "capguard.prime.label", text(id->label), "capguard.prime.images", num[2]);
  return json_pack("{s:I, s:I, s:I, s:o, s:o, s:s, s:s, s:I}", "format_version", (json_int_t)id->format_version,
                   "driver_version", (json_int_t)id->driver_version, "learned_sm", (json_int_t)id->device_sm,
                   "program", text(id->program), "label", text(id->label), "archs", archs, "created", created,
                   "images", (json_int_t)cg_prime_count(s));
}

static int put_json(const char *dir, json_t *j, char digest[72], size_t *size) {
  char *text = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(j);
  if (!text) return -1;
  *size = strlen(text);
  int rc = put_blob(dir, text, *size, digest);
  free(text);
  return rc;
}

/* The layout's blobs and index for a file already read and checked. */
static int write_layout(const char *dir, const uint8_t *bytes, size_t len, const cg_prime_set *s) {
  char layer[72], config[72], manifest[72];
  size_t config_size, manifest_size;
  if (make_dirs(dir) != 0 || put_blob(dir, bytes, len, layer) != 0 ||
      put_json(dir, identity_json(s, false), config, &config_size) != 0)
    return -1;
  json_t *m = json_pack("{s:i, s:s, s:{s:s, s:s, s:I}, s:[{s:s, s:s, s:I, s:{s:s}}], s:o}", "schemaVersion", 2,
                        "mediaType", MEDIA_MANIFEST, "config", "mediaType", MEDIA_CONFIG, "digest", config,
                        "size", (json_int_t)config_size, "layers", "mediaType", MEDIA_LAYER, "digest", layer,
                        "size", (json_int_t)len, "annotations", "org.opencontainers.image.title", "prime.cgp",
                        "annotations", identity_json(s, true));
  if (put_json(dir, m, manifest, &manifest_size) != 0) return -1;
  json_t *index = json_pack("{s:i, s:s, s:[{s:s, s:s, s:I, s:{s:s}}]}", "schemaVersion", 2, "mediaType",
                            MEDIA_INDEX, "manifests", "mediaType", MEDIA_MANIFEST, "digest", manifest, "size",
                            (json_int_t)manifest_size, "annotations", "org.opencontainers.image.ref.name",
                            "latest");
  char *text = index ? json_dumps(index, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(index);
  char path[PATH_MAX];
  static const char layout[] = "{\"imageLayoutVersion\":\"1.0.0\"}";
  int rc = -1;
  if (text && snprintf(path, sizeof path, "%s/oci-layout", dir) < (int)sizeof path &&
      write_all(path, layout, sizeof layout - 1, 0644) == 0 &&
      snprintf(path, sizeof path, "%s/index.json", dir) < (int)sizeof path)
    rc = write_all(path, text, strlen(text), 0644);
  free(text);
  return rc;
}

/* The file's bytes, read once and parsed from that very copy: what is
 * shipped is what was checked. Damage or a refusal is said, nothing shipped. */
static int read_checked(const char *path, uint8_t **bytes, size_t *len, cg_prime_set **s) {
  const char *why;
  if (read_all(path, LAYER_MAX, bytes, len, &why) != 0) return fail("%s: %s", path, why);
  warn_count w = {0};
  if (cg_prime_parse_memory(*bytes, *len, path, s, count_line, &w) != 0 || w.n) {
    cg_prime_free(*s);
    *s = NULL;
    free(*bytes);
    return fail("%s not exported: %s (capguard prime verify; prune rewrites it without damage)", path,
                w.n ? w.first : "not a priming file this capguard reads");
  }
  return CG_EXIT_OK;
}

static int cmd_export(int argc, char **argv) {
  const char *dir = NULL, *file = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--oci") && i + 1 < argc) dir = argv[++i];
    else if (argv[i][0] == '-' || file) return cg_usage_error(ME, "capguard prime export --oci DIR [FILE]",
                                                              "unexpected '%s'", argv[i]);
    else file = argv[i];
  }
  char path[PATH_MAX];
  if (!dir || !*dir) return cg_usage_error(ME, "capguard prime export --oci DIR [FILE]", "--oci DIR is needed");
  if (file) snprintf(path, sizeof path, "%s", file);
  else if (cg_cli_prime_default(path, sizeof path) != 0) return fail("no priming file named, and HOME is not set");
  uint8_t *bytes;
  size_t len;
  cg_prime_set *s;
  int rc = read_checked(path, &bytes, &len, &s);
  if (rc) return rc;
  if (!cg_prime_count(s)) rc = fail("%s holds no image: nothing to ship (capguard prime learn first)", path);
  else if (write_layout(dir, bytes, len, s) != 0) rc = fail("cannot write the layout in %s: %s", dir, strerror(errno));
  else {
    char archs[512];
    arch_list(s, archs, sizeof archs);
    printf("%s: %zu image%s (%s), %zu bytes, written as an OCI image layout\n", dir, cg_prime_count(s),
           cg_plural(cg_prime_count(s)), archs, len);
    cg_prime_print_identity(stdout, cg_prime_identity_of(s));
    if (!cg_prime_identity_of(s))
      printf("no identity: the file was not learned by capguard prime learn (its --label names it)\n");
  }
  cg_prime_free(s);
  free(bytes);
  return rc;
}

/* ---- import ---- */

/* "sha256:" and 64 lowercase hex digits: the only digest whose blob is read
 * (and the only text ever put into a path). */
static bool good_digest(const char *d) {
  if (!d || strncmp(d, "sha256:", 7) || strlen(d) != 71) return false;
  for (const char *p = d + 7; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return false;
  return true;
}

/* The blob a descriptor names, its size and digest checked. */
static int read_blob(const char *dir, json_t *desc, uint64_t max, uint8_t **out, size_t *len) {
  const char *digest = json_string_value(json_object_get(desc, "digest"));
  json_int_t size = json_integer_value(json_object_get(desc, "size"));
  if (!good_digest(digest) || !json_is_integer(json_object_get(desc, "size")) || size < 0)
    return fail("%s: a descriptor without a sha256 digest and a size; not a layout capguard wrote", dir);
  char path[PATH_MAX], hex[65];
  const char *why;
  snprintf(path, sizeof path, "%s/blobs/sha256/%s", dir, digest + 7);
  if (read_all(path, max, out, len, &why) != 0) return fail("%s: blob %.19s...: %s", dir, digest, why);
  cg_sha256_of(*out, *len, hex);
  if ((json_int_t)*len != size || strcmp(hex, digest + 7) != 0) {
    free(*out);
    return fail("%s: blob %s does not match its digest (%s, %zu bytes; the manifest says %lld bytes): "
                "refused, nothing imported; copy the artifact again",
                dir, digest, (json_int_t)*len != size ? "another size" : "other bytes", *len, (long long)size);
  }
  return CG_EXIT_OK;
}

/* The manifest of the layout's one image. */
static int read_manifest(const char *dir, json_t **manifest) {
  char path[PATH_MAX];
  const char *why;
  uint8_t *text;
  size_t len;
  snprintf(path, sizeof path, "%s/index.json", dir);
  if (read_all(path, JSON_MAX, &text, &len, &why) != 0)
    return fail("%s: no OCI image layout here (index.json: %s)", dir, why);
  json_t *index = json_loadb((const char *)text, len, 0, NULL);
  free(text);
  json_t *list = json_object_get(index, "manifests");
  if (json_array_size(list) != 1) {
    json_decref(index);
    return fail("%s: index.json %s; capguard reads a layout of one artifact (copy it into an empty DIR)", dir,
                json_is_array(list) ? "names several images" : "is not an OCI index");
  }
  json_t *desc = json_array_get(list, 0);
  int rc = strcmp(json_string_value(json_object_get(desc, "mediaType")) ?: "", MEDIA_MANIFEST)
               ? fail("%s: its image is not an OCI manifest", dir)
               : read_blob(dir, desc, JSON_MAX, &text, &len);
  json_decref(index);
  if (rc) return rc;
  *manifest = json_loadb((const char *)text, len, 0, NULL);
  free(text);
  return *manifest ? CG_EXIT_OK : fail("%s: its manifest is not JSON", dir);
}

/* The layer of the layout's artifact, checked, parsed: the priming file. */
static int read_artifact(const char *dir, uint8_t **bytes, size_t *len, cg_prime_set **s) {
  json_t *m;
  int rc = read_manifest(dir, &m);
  if (rc) return rc;
  json_t *config = json_object_get(m, "config"), *layers = json_object_get(m, "layers"), *layer = NULL;
  for (size_t i = 0; i < json_array_size(layers); i++)
    if (!strcmp(json_string_value(json_object_get(json_array_get(layers, i), "mediaType")) ?: "", MEDIA_LAYER))
      layer = layer ? NULL : json_array_get(layers, i);
  if (strcmp(json_string_value(json_object_get(config, "mediaType")) ?: "", MEDIA_CONFIG) || !layer)
    rc = fail("%s: not a capguard priming artifact (config %s, one layer %s)", dir, MEDIA_CONFIG, MEDIA_LAYER);
  else
    rc = read_blob(dir, layer, LAYER_MAX, bytes, len);
  json_decref(m);
  if (rc) return rc;
  warn_count w = {0};
  if (cg_prime_parse_memory(*bytes, *len, dir, s, count_line, &w) != 0 || w.n) {
    cg_prime_free(*s);
    free(*bytes);
    return fail("%s: its priming file is not used: %s", dir, w.n ? w.first : "refused");
  }
  return CG_EXIT_OK;
}

static int import_to(const char *dir, const char *path, bool say) {
  uint8_t *bytes;
  size_t len;
  cg_prime_set *s;
  int rc = read_artifact(dir, &bytes, &len, &s);
  if (rc) return rc;
  if (write_all(path, bytes, len, 0600) != 0) rc = fail("cannot write %s: %s", path, strerror(errno));
  else if (say) {
    char archs[512];
    arch_list(s, archs, sizeof archs);
    printf("%s: %zu image%s (%s), digests checked, from %s\n", path, cg_prime_count(s),
           cg_plural(cg_prime_count(s)), archs, dir);
    cg_prime_print_identity(stdout, cg_prime_identity_of(s));
  }
  cg_prime_free(s);
  free(bytes);
  return rc;
}

static int cmd_import(int argc, char **argv) {
  static const char usage[] = "capguard prime import --oci DIR [--prime FILE]";
  const char *dir = NULL, *file = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--oci") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "--prime") && i + 1 < argc) file = argv[++i];
    else return cg_usage_error(ME, usage, "unexpected '%s'", argv[i]);
  }
  if (!dir || !*dir) return cg_usage_error(ME, usage, "--oci DIR is needed");
  char path[PATH_MAX];
  if (file) snprintf(path, sizeof path, "%s", file);
  else if (cg_cli_prime_default(path, sizeof path) != 0) return fail("no --prime FILE, and HOME is not set");
  return import_to(dir, path, true);
}

/* The cache's file for an artifact, named by its index (the manifest's
 * digest): another artifact gets another file, and the same one is written
 * once (it then grows as runs record into it). */
static int cache_path(const char *arg, const char *dir, char *out, size_t cap) {
  char path[PATH_MAX], hex[65], *slash;
  uint8_t *text;
  size_t len;
  const char *why;
  snprintf(path, sizeof path, "%s/index.json", dir);
  if (read_all(path, JSON_MAX, &text, &len, &why) != 0) return fail("%s: %s", path, why);
  cg_sha256_of(text, len, hex);
  free(text);
  if (cg_cli_prime_default(path, sizeof path) != 0 || !(slash = strrchr(path, '/')))
    return fail("%s: no cache to import it into (HOME is not set)", arg);
  snprintf(slash, sizeof path - (size_t)(slash - path), "/oci");
  for (char *p = path + 1; *p; p++) /* the missing levels, 0700 as the shim makes them */
    if (*p == '/') {
      *p = 0;
      int made = mkdir(path, 0700);
      *p = '/';
      if (made != 0 && errno != EEXIST) return fail("cannot create %s: %s", path, strerror(errno));
    }
  if (mkdir(path, 0700) != 0 && errno != EEXIST) return fail("cannot create %s: %s", path, strerror(errno));
  if (snprintf(out, cap, "%s/%.32s.cgp", path, hex) >= (int)cap) return fail("%s: path too long", path);
  return CG_EXIT_OK;
}

int cg_prime_resolve_oci(const char *me, const char *arg, char *out, size_t cap) {
  if (strncmp(arg, "oci:", 4) != 0) {
    snprintf(out, cap, "%s", arg);
    return 0;
  }
  /* Checked at every use, cached or not: a layout changed since is refused,
   * never run with. */
  const char *dir = arg + 4;
  uint8_t *bytes;
  size_t len;
  cg_prime_set *s;
  int rc = read_artifact(dir, &bytes, &len, &s);
  if (rc) return rc;
  rc = cache_path(arg, dir, out, cap);
  if (!rc && access(out, F_OK) != 0) {
    if (write_all(out, bytes, len, 0600) != 0) rc = fail("cannot write %s: %s", out, strerror(errno));
    else fprintf(stderr, "%s: %s imported into %s (digests checked)\n", me, dir, out);
  }
  cg_prime_free(s);
  free(bytes);
  return rc;
}

/* ---- info ---- */

static int cmd_info(int argc, char **argv) {
  if (argc > 2 || (argc == 2 && argv[1][0] == '-'))
    return cg_usage_error(ME, "capguard prime info [FILE]", "info takes at most one FILE");
  char path[PATH_MAX];
  if (argc == 2) snprintf(path, sizeof path, "%s", argv[1]);
  else if (cg_cli_prime_default(path, sizeof path) != 0) return fail("no priming file named, and HOME is not set");
  cg_prime_set *s;
  warn_count w = {0};
  if (access(path, F_OK) != 0) return fail("%s does not exist; check the name", path);
  if (cg_prime_load(path, &s, count_line, &w) != 0) return fail("%s", w.first);
  char archs[512];
  arch_list(s, archs, sizeof archs);
  printf("%s: %zu image%s (%s)\n", path, cg_prime_count(s), cg_plural(cg_prime_count(s)), archs[0] ? archs : "none");
  if (cg_prime_identity_of(s)) cg_prime_print_identity(stdout, cg_prime_identity_of(s));
  else printf("identity: none (learned before capguard wrote one; capguard prime learn writes it)\n");
  cg_prime_free(s);
  return w.n ? CG_EXIT_FINDING : CG_EXIT_OK;
}

int cg_cmd_prime_oci(int argc, char **argv) {
  static const char *const helps[][2] = {
      {"export", "usage: capguard prime export --oci DIR [FILE]\n\nWrite FILE as an OCI image layout in DIR "
                 "(created if missing): the file as one\nlayer (application/vnd.capguard.prime.v1), its "
                 "identity as the config and as\nannotations. skopeo copy oci:DIR docker://REGISTRY/NAME:TAG "
                 "pushes it\n(docs/fleet.md). A file with damaged records is not exported.\n"},
      {"import", "usage: capguard prime import --oci DIR [--prime FILE]\n\nRead the OCI image layout in DIR, "
                 "check the index, manifest and layer\nagainst their digests and sizes, and write the priming "
                 "file to FILE (replaced\nwhole). A blob that does not match is refused; nothing is written.\n"
                 "--prime oci:DIR on run, prime learn and prime check reads a layout the same way.\n"},
      {"info", "usage: capguard prime info [FILE]\n\nWhat the file is for: its images' architectures and its "
               "identity (the program\nit was learned from, the driver and GPU it was learned on, the format, "
               "the\nlabel of prime learn --label).\n"},
  };
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
      for (size_t h = 0; h < sizeof helps / sizeof helps[0]; h++)
        if (!strcmp(argv[0], helps[h][0])) {
          printf("%s\nFILE defaults to $CAPGUARD_PRIME, else $XDG_CACHE_HOME/capguard/prime.cgp,\n"
                 "else ~/.cache/capguard/prime.cgp.\n", helps[h][1]);
          return CG_EXIT_OK;
        }
  if (!strcmp(argv[0], "export")) return cmd_export(argc, argv);
  if (!strcmp(argv[0], "import")) return cmd_import(argc, argv);
  return cmd_info(argc, argv);
}
