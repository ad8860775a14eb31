/* fakecuda: registry of every handle the fake has handed out.
 * Lets each entry point tell a live handle from a stale or invented one without
 * dereferencing it. Callers hold the fake's mutex (see fake_call.c). */
#include "fake_internal.h"

static struct fc_handle *registry;

void fc_register(struct fc_handle *h, const void *key, int kind)
{
  h->key = key;
  h->kind = kind;
  h->alive = 1;
  HASH_ADD(hh, registry, key, sizeof(h->key), h);
}

struct fc_handle *fc_lookup_any(const void *key, int kind)
{
  struct fc_handle *h = NULL;
  if (key == NULL)
    return NULL;
  HASH_FIND(hh, registry, &key, sizeof(key), h);
  return (h != NULL && h->kind == kind) ? h : NULL;
}

struct fc_handle *fc_lookup(const void *key, int kind)
{
  struct fc_handle *h = fc_lookup_any(key, kind);
  return (h != NULL && h->alive) ? h : NULL;
}

void fc_unregister(struct fc_handle *h)
{
  HASH_DEL(registry, h);
}

void fc_foreach(int kind, void (*fn)(struct fc_handle *h, void *arg), void *arg)
{
  struct fc_handle *h, *tmp;
  HASH_ITER(hh, registry, h, tmp) {
    if (h->kind == kind && h->alive)
      fn(h, arg);
  }
}
