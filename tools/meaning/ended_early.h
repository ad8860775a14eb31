/* The processes that used CUDA and wrote no exit record (the shim's
 * "summary" line): killed, crashed, left through _exit (which skips the exit
 * handler that writes it: dash, os._exit in a forked Python worker), still
 * running, or cut from the log. The
 * findings name them; run's summary and the report list them. */
#ifndef CAPGUARD_ENDED_EARLY_H
#define CAPGUARD_ENDED_EARLY_H

#include <stdbool.h>
#include <stddef.h>

#include "log_reader.h"

/* Whether process p is one of them. */
bool cgr_ended_early(const cgl_process *p);

/* "pid 2703 (host kill), killed by signal 9 (SIGKILL); pid 2704 (worker)": at most max of
 * them, then "and N more". signal_pid's process is said to have died of
 * signal (what capguard run saw in its wait status; 0: none known). */
void cgr_ended_list(const cgl_log *log, size_t max, long long signal_pid, int signal, char *buf,
                    size_t cap);

/* The last thing process p (one of them) logged, in words: "cuModuleLoadData
 * (module-load, refused) during capture 1 at vllm_like.c:102, 3 ms after its
 * first line", "capture 2 began at SITE, ...", or "its start, ..." when it
 * logged neither a call during capture nor a capture. */
void cgr_ended_last(const cgl_log *log, size_t p, char *buf, size_t cap);

/* "signal 9 (SIGKILL)" */
void cgr_signal_words(int signal, char *buf, size_t cap);

#endif
