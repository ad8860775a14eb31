#include "warn.h"
#include "capguard/char_class.h"

#include "capguard/write_whole.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

/* stderr may be a file under a size limit too: no SIGXFSZ for the host. */
int cg_write_all(int fd, const char *buf, size_t len, size_t *written) {
  return cg_write_whole(fd, buf, len, -1, written);
}

/* A warning is one line, whatever it quotes: values from the environment
 * (CAPGUARD_MODE, paths) may hold newlines or terminal escape sequences, so
 * control characters are written as \xNN, never raw. */
void cg_warn(const char *fmt, ...) {
  char msg[1024], line[4 * sizeof msg + 16];
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t mlen = m < 0 ? 0 : (size_t)m < sizeof msg ? (size_t)m : sizeof msg - 1;
  size_t len = (size_t)snprintf(line, sizeof line, "capguard: ");
  for (size_t i = 0; i < mlen; i++) {
    unsigned char c = (unsigned char)msg[i];
    if (cg_is_control((unsigned char)c)) {
      line[len++] = '\\';
      line[len++] = 'x';
      line[len++] = "0123456789abcdef"[c >> 4];
      line[len++] = "0123456789abcdef"[c & 0xf];
    } else {
      line[len++] = (char)c;
    }
  }
  line[len++] = '\n';
  cg_write_all(2, line, len, NULL); /* stderr: nowhere to complain to, best effort */
}

static int oom_said;

void cg_warn_oom(const char *what) {
  if (__atomic_exchange_n(&oom_said, 1, __ATOMIC_ACQ_REL) == 0)
    cg_warn("out of memory (%s): capguard passes such calls through to the driver untouched; "
            "further shortages are not reported",
            what);
}

void cg_warn_atfork_child(void) { __atomic_store_n(&oom_said, 0, __ATOMIC_RELAXED); }
