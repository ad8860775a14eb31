/* Why SIGXFSZ and SIGPIPE are blocked and the one our write raised is
 * consumed, rather than the limit or the reader checked beforehand
 * (capguard/write_whole.h).
 *
 * A write at or past RLIMIT_FSIZE makes the kernel send SIGXFSZ to the
 * calling thread (send_sig to current: thread-directed) and fail with EFBIG;
 * the default action kills the process (exit 153 under ulimit -f 8, in a
 * program that exits 0 without capguard). A write to a pipe or socket whose
 * reader has gone does the same with SIGPIPE and EPIPE (exit 141: a C host
 * whose stderr is a pipe to a log collector that died, and which never
 * writes to stderr itself). Checking getrlimit and the file's size, or
 * whether the pipe has a reader, first cannot be made right: another process
 * (or thread) may append to the same log between the check and the write,
 * the reader may go in between, and another thread may change the limit.
 * Installing a handler or SIG_IGN would change the host's own disposition.
 *
 * So for the length of the write the calling thread blocks both
 * (pthread_sigmask: this thread only, restored after; the host's handler is
 * never touched). If our write then failed with EFBIG or EPIPE, the kernel
 * left that signal pending on this thread, and sigtimedwait with a zero
 * timeout takes it back before the mask is restored. It is taken only when
 * none was pending before the write: standard signals do not queue, so if
 * the host already had one pending (blocked by the host itself), ours
 * merged into it, and the host gets exactly the one it would have got
 * without capguard. sigtimedwait takes a thread's own pending signals
 * before the process's, so a SIGXFSZ or SIGPIPE someone sent the whole
 * process with kill() during the write stays pending and is delivered when
 * the mask is restored. (EFBIG without a signal exists only at the file
 * system's own size limit, exabytes on Linux; only then could a
 * process-directed SIGXFSZ sent in that same instant be taken.) */
#include "capguard/write_whole.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The signal a failed write raised, or 0. */
static int raised_by(int err) { return err == EFBIG ? SIGXFSZ : err == EPIPE ? SIGPIPE : 0; }

/* The write, with SIGXFSZ and SIGPIPE blocked on this thread by the caller;
 * pending (NULL: unknown) holds what was pending on it before. */
static int write_blocked(int fd, const void *buf, size_t len, int64_t off, size_t *done_out,
                         const sigset_t *pending) {
  const char *p = buf;
  size_t done = 0;
  int err = 0;
  while (done < len) {
    ssize_t n = off < 0 ? write(fd, p + done, len - done)
                        : pwrite(fd, p + done, len - done, (off_t)(off + (int64_t)done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      err = n < 0 ? errno : ENOSPC;
      break;
    }
    done += (size_t)n;
  }
  int sig = raised_by(err);
  if (sig && pending && !sigismember(pending, sig)) {
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    static const struct timespec now = {0, 0};
    while (sigtimedwait(&one, NULL, &now) < 0 && errno == EINTR) {
    }
  }
  if (done_out)
    *done_out = done;
  return err;
}

int cg_write_whole(int fd, const void *buf, size_t len, int64_t off, size_t *done_out) {
  sigset_t ours, old, pending;
  sigemptyset(&ours);
  sigaddset(&ours, SIGXFSZ);
  sigaddset(&ours, SIGPIPE);
  bool masked = pthread_sigmask(SIG_BLOCK, &ours, &old) == 0;
  bool pending_known = masked && sigpending(&pending) == 0;
  int err = write_blocked(fd, buf, len, off, done_out, pending_known ? &pending : NULL);
  if (masked)
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  return err;
}

/* Held by the caller since before: the mask it had then says whether the
 * host could have one of the two pending on this thread. Not blocked by
 * the host, none was (a pending signal that is not blocked is delivered
 * before the thread runs on), and none has come since but one sent to this
 * very thread (tgkill) in the moments the caller has held them: only then
 * is sigpending asked, which a log line paid at every write. */
int cg_write_whole_held(int fd, const void *buf, size_t len, int64_t off, size_t *done_out,
                        const sigset_t *host_mask) {
  sigset_t pending;
  const sigset_t *before = &pending;
  if (!sigismember(host_mask, SIGXFSZ) && !sigismember(host_mask, SIGPIPE))
    sigemptyset(&pending);
  else if (sigpending(&pending) != 0)
    before = NULL;
  return write_blocked(fd, buf, len, off, done_out, before);
}

/* After a write that stopped part way, the descriptor's position (O_APPEND:
 * the end of what this write put there) says where our part ends. It is cut
 * off only while it is still the file's end: a line another writer appended
 * after it must not be cut. On a full disk or at the size limit nobody else
 * can append either, so the part is taken back in practice; when it cannot
 * be, the caller knows (torn) and starts its next line on a fresh one. */
static int append_whole(int fd, const void *buf, size_t len, int *torn, const sigset_t *host_mask) {
  size_t done = 0;
  *torn = 0;
  int err = host_mask ? cg_write_whole_held(fd, buf, len, -1, &done, host_mask)
                      : cg_write_whole(fd, buf, len, -1, &done);
  if (!err || !done)
    return err;
  off_t end = lseek(fd, 0, SEEK_CUR);
  struct stat st;
  if (end >= (off_t)done && fstat(fd, &st) == 0 && st.st_size == end && ftruncate(fd, end - (off_t)done) == 0)
    return err;
  *torn = 1;
  return err;
}

int cg_append_whole(int fd, const void *buf, size_t len, int *torn) {
  return append_whole(fd, buf, len, torn, NULL);
}

int cg_append_whole_held(int fd, const void *buf, size_t len, int *torn, const sigset_t *host_mask) {
  return append_whole(fd, buf, len, torn, host_mask);
}
