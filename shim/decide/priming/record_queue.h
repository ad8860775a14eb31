/* Images to record into the priming file, kept off the capture's path.
 * A load during capture used to write its record there and then: file I/O
 * (open, flock, pwrite) on the capture's path, and one record for every
 * load, allowed or not (16,665 records for 2 images in one process). Now a
 * load only queues its image, once per process and image (a copy of its
 * bytes, since the caller's buffer may go once the load returns); the
 * queue is written when a capture ends and no capture prohibits the thread,
 * at a refused load (its captures are broken already: priming.h), or at exit: one record per image and process, and at exit one more only
 * if the process needed more copies alive at once than it recorded. */
#ifndef CAPGUARD_RECORD_QUEUE_H
#define CAPGUARD_RECORD_QUEUE_H

#include <stdbool.h>

#include "capguard/image.h"
#include "capguard/load_options.h"
#include "capguard/prime_file.h"

/* The image of a load made during capture, to be recorded. A copy is kept
 * the first time (false, said once, when there is no memory or room for
 * it: 4096 images, and CAPGUARD_PRIME_MAX bytes, a process). hit
 * false: this process has written a hit for the image already (served from
 * the file, and refreshed): its record states only a count of copies. */
bool cg_record_queue_add(const cg_image_info *image, bool library, const cg_load_opts *opts, bool hit);
/* Whether a first record may be due: a fast, lock-free look (at exit the
 * queue is drained whatever this says). */
bool cg_record_queue_due(void);
/* Hands each image whose record is due to write, outside the queue's lock:
 * one never written (hit: its image or a hit, unless added without), and,
 * unless firsts_only, one whose count of copies alive at once grew since it
 * was written (a count, no hit): a count is written as soon as it grows, at
 * the next capture's end, so that a learn killed after its captures
 * (SIGKILL, SIGTERM, a rank hung at teardown) keeps every copy it needed.
 * CG_DRAIN_FIRSTS: from inside a broken capture, where only an image's
 * first record is worth the file I/O (a count that grew waits for the end);
 * CG_DRAIN_DUE: a capture's end, when something was added since the last
 * drain; CG_DRAIN_ALL: exit, every image looked at. first: the image's first record in this process
 * (with or without its hit: one refreshed already states only its copies).
 * write returns 0 when written, 1 to leave it for later (the file is busy),
 * -1 to stop (recording is off). Returns the number written. */
typedef int (*cg_record_write_fn)(const cg_prime_record *r, bool hit, bool first, void *ctx);
typedef enum { CG_DRAIN_FIRSTS, CG_DRAIN_DUE, CG_DRAIN_ALL } cg_drain_how;
unsigned cg_record_queue_drain(cg_record_write_fn write, void *ctx, cg_drain_how how);
/* A forked child starts with an empty queue (the parent's images are the
 * parent's to record). */
void cg_record_queue_after_fork_child(void);

#endif
