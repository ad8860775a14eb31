/* The C++ ABI's demangler, from libstdc++ (which the command links): a C
 * function by ABI, declared here because its header, <cxxabi.h>, is C++.
 * A malloc'd name, or NULL with *status != 0. */
#ifndef CAPGUARD_CXA_DEMANGLE_H
#define CAPGUARD_CXA_DEMANGLE_H

#include <stddef.h>

extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

#endif
