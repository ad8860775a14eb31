/* Names that outlive the call that made them: a capture's first offender
 * keeps a pointer to its call's name for the life of the process (the
 * driver's log names calls capguard has no row for; a fork is named with its
 * stream). */
#ifndef CAPGUARD_NAMES_H
#define CAPGUARD_NAMES_H

/* The interned copy of name (cut to 95 bytes), or fallback when the
 * table (64 names) is full. Takes a lock never held across anything else. */
const char *cg_name_intern(const char *name, const char *fallback);
/* Fork: the lock starts released in the child (another thread may have held
 * it); the names already interned stay. */
void cg_names_atfork_child(void);

#endif
