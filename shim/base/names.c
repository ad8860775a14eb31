#include "names.h"
#include "locks.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define NAMES 64
#define NAME_LEN 96
static char names[NAMES][NAME_LEN];
static unsigned n_names;
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;

void cg_names_atfork_child(void) { pthread_mutex_init(&names_lock, NULL); }

const char *cg_name_intern(const char *name, const char *fallback) {
  char cut[NAME_LEN];
  snprintf(cut, sizeof cut, "%s", name);
  const char *found = fallback;
  cg_lock(&names_lock);
  for (unsigned i = 0; i < n_names; i++)
    if (!strcmp(names[i], cut)) {
      found = names[i];
      goto out;
    }
  if (n_names < NAMES) {
    memcpy(names[n_names], cut, sizeof cut);
    found = names[n_names++];
  }
out:
  cg_unlock(&names_lock);
  return found;
}
