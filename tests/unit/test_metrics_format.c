/* The metrics file's text (detect/log/metrics_format.c) and the rank's
 * variables (detect/log/rank.c): what promtool and node_exporter are handed,
 * checked line by line here, and by the real tools in test_cli_metrics.sh. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/metrics_format.h"
#include "capguard/rank.h"
#include "check_run.h"

static char buf[16384];

static cg_summary fixture(void) {
  cg_summary s = {.pid = 42, .captures_begun = 5, .captures_broken = 1, .capture_ns = 41200000007ull};
  s.verdicts[CG_VERDICT_ESCAPED] = 2;
  s.rank_known = true;
  s.rank = 3;
  return s;
}

static const char labels[] =
    "{host=\"node-1\",pid=\"42\",program=\"python3\",rank=\"3\",mode=\"guard\",driver_version=\"12020\",gpu_arch=\"sm_90\"";

START_TEST(test_series) {
  cg_summary s = fixture();
  cg_metrics_call calls[] = {{"cuModuleLoadData", 4}, {"cuMemAlloc_v2", 1}};
  cg_metrics m = {.sum = &s, .host = "node-1", .program = "python3", .mode = "guard", .driver_version = 12020,
                  .sm = 90, .refusals = calls, .n_refusals = 2};
  m.loads[CG_VERDICT_SERVED] = 6;
  m.loads[CG_VERDICT_REFUSED] = 4;
  size_t n = cg_metrics_format(&m, buf, sizeof buf);
  ck_assert_uint_lt(n, sizeof buf);
  ck_assert_uint_eq(strlen(buf), n);
  ck_assert(n > 0 && buf[n - 1] == '\n');
  char want[512];
#define HAS(name, extra, value)                                                        \
  do {                                                                                 \
    snprintf(want, sizeof want, "\n%s%s%s} %s\n", name, labels, extra, value);         \
    ck_assert_msg(strstr(buf, want), "missing: %s in\n%s", want, buf);                 \
  } while (0)
  HAS("capguard_captures_total", "", "5");
  HAS("capguard_captures_broken_total", "", "1");
  HAS("capguard_capture_seconds_total", "", "41.200000007");
  HAS("capguard_loads_during_capture_total", ",verdict=\"served\"", "6");
  HAS("capguard_loads_during_capture_total", ",verdict=\"refused\"", "4");
  HAS("capguard_loads_during_capture_total", ",verdict=\"allowed\"", "0");
  HAS("capguard_loads_during_capture_total", ",verdict=\"rescued\"", "0");
  HAS("capguard_refusals_total", ",call=\"cuModuleLoadData\"", "4");
  HAS("capguard_refusals_total", ",call=\"cuMemAlloc_v2\"", "1");
  HAS("capguard_escapes_total", "", "2");
  ck_assert(strstr(buf, "# TYPE capguard_captures_total counter\n"));
  ck_assert(strstr(buf, "# TYPE capguard_capture_seconds_total counter\n"));
  ck_assert(strstr(buf, "# HELP capguard_capture_seconds_total "));
  /* no first replay known: no such gauge */
  ck_assert(!strstr(buf, "capguard_first_replay_seconds"));
  /* no priming file read: none of its series */
  ck_assert(!strstr(buf, "capguard_prime_"));
  /* a file that cannot serve here: counted, its reason 1 and the others 0 */
  m.prime = (cg_metrics_prime){.read = true, .images = 7, .usable = 0, .served = 0, .cannot_serve = "arch"};
  cg_metrics_format(&m, buf, sizeof buf);
  HAS("capguard_prime_images", "", "7");
  HAS("capguard_prime_images_usable", "", "0");
  HAS("capguard_prime_loads_served_total", "", "0");
  HAS("capguard_prime_cannot_serve", ",reason=\"arch\"", "1");
  HAS("capguard_prime_cannot_serve", ",reason=\"format\"", "0");
  HAS("capguard_prime_cannot_serve", ",reason=\"program\"", "0");
  ck_assert(strstr(buf, "# TYPE capguard_prime_images gauge\n"));
  ck_assert(strstr(buf, "# TYPE capguard_prime_loads_served_total counter\n"));
}
END_TEST

START_TEST(test_optional_and_escaped) {
  cg_summary s = fixture();
  s.rank_known = false;
  s.first_capture_ns = 1000000000;
  s.first_replay_ns = 3500000000;
  cg_metrics m = {.sum = &s, .host = "a\"b\\c\nd", .program = "", .mode = "report"};
  size_t n = cg_metrics_format(&m, buf, sizeof buf);
  ck_assert_uint_lt(n, sizeof buf);
  ck_assert_msg(strstr(buf, "\ncapguard_captures_total{host=\"a\\\"b\\\\c\\nd\",pid=\"42\",mode=\"report\"} 5\n"),
                "%s", buf);
  ck_assert(strstr(buf, "\ncapguard_first_replay_seconds{host=\"a\\\"b\\\\c\\nd\",pid=\"42\",mode=\"report\"} 2.500000000\n"));
  ck_assert(strstr(buf, "# TYPE capguard_first_replay_seconds gauge\n"));
  ck_assert(!strstr(buf, "rank=") && !strstr(buf, "gpu_arch=") && !strstr(buf, "program="));
  ck_assert(!strstr(buf, "capguard_refusals_total")); /* no refusals: no family */
  /* snprintf's contract: a short buffer is told the length it needs */
  char small[64];
  ck_assert_uint_eq(cg_metrics_format(&m, small, sizeof small), n);
  ck_assert_uint_eq(strlen(small), sizeof small - 1);
}
END_TEST

/* Label values are valid UTF-8 whatever the bytes: a program name the
 * kernel cut mid-character (15 bytes of comm), a host name in Latin-1, an
 * overlong form and a surrogate each become U+FFFD; valid characters and
 * the escapes stay; nothing is dropped. */
START_TEST(test_labels_utf8) {
  cg_summary s = fixture();
  s.rank_known = false;
  cg_metrics m = {.sum = &s,
                  .host = "h\xe9te\nx",
                  .program = "vllm-\xe6\x8e\xa8\xe7\x90\x86\xe6\x9c\x8d\xe5",
                  .mode = "guard"};
  cg_metrics_format(&m, buf, sizeof buf);
  ck_assert_msg(
      strstr(buf, "capguard_captures_total{host=\"h\xef\xbf\xbdte\\nx\",pid=\"42\","
                  "program=\"vllm-\xe6\x8e\xa8\xe7\x90\x86\xe6\x9c\x8d\xef\xbf\xbd\",mode=\"guard\"} 5\n"),
      "%s", buf);
  m.host = "\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80ok\xf0\x9f\x98\x80\"";
  cg_metrics_format(&m, buf, sizeof buf);
  /* 2 for the overlong form, 3 for the surrogate, 4 past U+10FFFF */
  ck_assert_msg(strstr(buf, "{host=\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                            "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdok\xf0\x9f\x98\x80\\\"\","),
                "%s", buf);
}
END_TEST

static const char *const *env_now;
static const char *fake_getenv(const char *name) {
  for (const char *const *e = env_now; *e; e += 2)
    if (!strcmp(e[0], name))
      return e[1];
  return NULL;
}

static cg_rank_info rank_of(const char *const *env) {
  env_now = env;
  return cg_rank_from_env(fake_getenv, NULL, 0);
}

START_TEST(test_rank) {
  static const char *const none[] = {NULL};
  cg_rank_info r = rank_of(none);
  ck_assert_int_eq(r.rank, -1);
  ck_assert_int_eq(r.local_rank, -1);
  ck_assert_int_eq(r.world_size, 0);
  /* torchrun (TORCHELASTIC_RUN_ID) under srun: torchrun is the innermost launcher */
  static const char *const torch[] = {"RANK",         "5", "LOCAL_RANK",          "1",    "WORLD_SIZE", "16",
                                      "SLURM_PROCID", "9", "TORCHELASTIC_RUN_ID", "none", NULL};
  r = rank_of(torch);
  ck_assert_int_eq(r.rank, 5);
  ck_assert_int_eq(r.local_rank, 1);
  ck_assert_int_eq(r.world_size, 16);
  static const char *const ompi[] = {"OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "4", NULL};
  r = rank_of(ompi);
  ck_assert_int_eq(r.rank, 2);
  ck_assert_int_eq(r.world_size, 4);
  static const char *const pmi[] = {"PMI_RANK", "0", "PMI_SIZE", "2", NULL};
  r = rank_of(pmi);
  ck_assert_int_eq(r.rank, 0);
  ck_assert_int_eq(r.world_size, 2);
  static const char *const slurm[] = {"SLURM_PROCID", "7", "SLURM_NTASKS", "8", "SLURM_LOCALID", "3", NULL};
  r = rank_of(slurm);
  ck_assert_int_eq(r.rank, 7);
  ck_assert_int_eq(r.local_rank, 3);
  ck_assert_int_eq(r.world_size, 8);
  /* junk is no rank: the next launcher's variables are asked */
  static const char *const junk[] = {"RANK", "-1", "PMI_RANK", "x", "SLURM_PROCID", "1", NULL};
  r = rank_of(junk);
  ck_assert_int_eq(r.rank, 1);
  static const char *const huge[] = {"RANK", "99999999999999999999", NULL};
  ck_assert_int_eq(rank_of(huge).rank, -1);
}
END_TEST

/* The launcher's own variable wins over a plain RANK left stale; a value
 * that is no rank is said (once: the caller says why), never kept. */
START_TEST(test_rank_stale_and_invalid) {
  static const char *const stale[] = {
      "RANK", "0", "WORLD_SIZE", "2", "OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2", NULL};
  env_now = stale;
  char why[160];
  cg_rank_info r = cg_rank_from_env(fake_getenv, why, sizeof why);
  ck_assert_int_eq(r.rank, 1);
  ck_assert_str_eq(why, "");
  static const char *const slurm_stale[] = {"RANK", "0", "SLURM_PROCID", "3", "SLURM_NTASKS", "4", NULL};
  ck_assert_int_eq(rank_of(slurm_stale).rank, 3);
  static const struct {
    const char *rank, *size, *said;
  } bad[] = {
      {"abc", NULL, "RANK='abc' is not a rank (a whole number from 0)"},
      {"-1", NULL, "RANK='-1' is not a rank (a whole number from 0)"},
      {"9223372036854775808", NULL, "RANK='9223372036854775808' is not a rank (a whole number from 0)"},
      {"5", "2", "RANK='5' is not a rank of a world of 2"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *env[] = {"RANK", bad[i].rank, bad[i].size ? "WORLD_SIZE" : NULL, bad[i].size, NULL};
    env_now = env;
    r = cg_rank_from_env(fake_getenv, why, sizeof why);
    ck_assert_int_eq(r.rank, -1);
    ck_assert_str_eq(why, bad[i].said);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("metrics_format");
  TCase *tc = tcase_create("metrics");
  tcase_add_test(tc, test_series);
  tcase_add_test(tc, test_optional_and_escaped);
  tcase_add_test(tc, test_labels_utf8);
  tcase_add_test(tc, test_rank);
  tcase_add_test(tc, test_rank_stale_and_invalid);
  suite_add_tcase(s, tc);
  return tk_check_run(s);
}
