#!/usr/bin/env bash
# libcapguard.so links only what it calls: its undefined symbols are glibc
# functions on the list below, each one the shim (or the core code it
# calls) really uses -- a name that leaves the code must leave the list --
# and it carries none of the code that only the CLI or the tests call
# (linked with --gc-sections over per-function sections, shim/meson.build).
set -euo pipefail
lib=$1
# What the shim calls, by purpose (gethostname: %h in the log name; getauxval: AT_SECURE, secure
# execution, shim/base/config.c; environ (__environ its other name): the
# CAPGUARD_* settings found in one pass, config.c; the sig* line: its own writes keep a
# SIGXFSZ they raise from the host, detect/base/write_whole.c; pthread_create and
# the two after it: the hang watch's thread, started only under CAPGUARD_HANG_S). The loader's and the toolchain's own
# (_ITM_*, __gmon_start__, __cxa_finalize) are not calls of capguard's.
allowed="
  malloc calloc realloc aligned_alloc free
  memchr memcmp memcpy memmove memset strchr strcmp strlen strncmp strrchr strstr strtol strerror
  snprintf vsnprintf __isoc99_sscanf getenv setenv environ __environ qsort __errno_location
  getcwd open64 close read write pread64 pwrite64 fstat64 stat64 lstat64 flock ftruncate64 lseek64 mkdir
  pthread_sigmask sigemptyset sigaddset sigismember sigpending sigtimedwait sigfillset sigdelset
  fopen64 fgets fclose mmap64 munmap madvise sysconf
  getpid getppid geteuid clock_gettime time nanosleep sched_yield syscall gethostname getauxval
  opendir readdir64 closedir unlink rename strtoull
  kill fchmod seekdir telldir
  dlopen dlclose dlerror dlvsym dladdr dladdr1 dl_iterate_phdr backtrace
  pthread_mutex_init pthread_mutex_lock pthread_mutex_trylock pthread_mutex_timedlock pthread_mutex_unlock
  pthread_setcancelstate
  pthread_rwlock_rdlock pthread_rwlock_wrlock pthread_rwlock_unlock __register_atfork
  pthread_once pthread_key_create pthread_setspecific
  pthread_self pthread_getattr_np pthread_attr_getstack pthread_attr_destroy
  pthread_create pthread_detach pthread_setname_np
"
toolchain="_ITM_deregisterTMCloneTable _ITM_registerTMCloneTable __gmon_start__ __cxa_finalize"
# What a compiler may call in place of a function on the list (clang: bcmp
# for a memcmp compared with zero), as "listed:instead".
instead="memcmp:bcmp"
# Code the shim must not carry: the CLI's priming-file maintenance and the
# tests' "where am I" helpers.
absent="cg_prime_rewrite cg_prime_verify cg_stack_where cg_native_where short_path"

got=$(nm -D --undefined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | sort -u)
status=0
for s in $got; do
  case " $(echo $allowed $toolchain ${instead//*:/}) " in *" $s "*) continue;; esac
  # A sanitized build (CG_SANITIZED) calls the sanitizer's runtime and its
  # interceptors' variants of glibc functions.
  if [ "${CG_SANITIZED:-}" = 1 ]; then
    case $s in __asan_*|__ubsan_*|__sanitizer_*|__lsan_*) continue;; esac
  fi
  echo "libcapguard.so calls $s, which is not on the list of what it may call ($0)"; status=1
done
# The list stays honest: each name on it is called (a sanitized build may
# call its runtime's versions instead, so only the plain build checks this).
if [ "${CG_SANITIZED:-}" != 1 ]; then
  for s in $allowed; do
    alt=$(tr ' ' '\n' <<<"$instead" | sed -n "s/^$s://p")
    grep -qx "$s" <<<"$got" || { [ -n "$alt" ] && grep -qx "$alt" <<<"$got"; } || { echo "$s is on the list but libcapguard.so does not call it: drop it"; status=1; }
  done
fi
defined=$(nm "$lib" | awk 'NF == 3 && $2 ~ /^[tTwW]$/ {print $3}' | sort -u)
[ "$(echo "$defined" | wc -l)" -gt 50 ] || { echo "nm found too few functions in $lib: is it stripped?"; exit 1; }
for s in $absent; do
  if grep -qx "$s" <<<"$defined"; then echo "libcapguard.so carries $s, which it never calls"; status=1; fi
done
[ $status = 0 ] && echo "links: $(echo "$got" | wc -w) undefined symbols, all on the list; none of: $absent"
exit $status
