/* A row's parameter list, (type, name, type, name, ...), turned into what a
 * wrapper needs: the parameter declarations, the argument list, a struct of
 * the arguments. Plain C preprocessor; up to 11 parameters (the most any
 * wrapped entry point takes: cuLaunchKernel), or none: () (cuCtxSynchronize),
 * whose declaration is "void" and whose other lists are empty. */
#ifndef CAPGUARD_PARAMS_H
#define CAPGUARD_PARAMS_H

#define CG_PP_CAT(a, b) CG_PP_CAT_(a, b)
#define CG_PP_CAT_(a, b) a##b
#define CG_PP_UNPAREN(...) __VA_ARGS__
#define CG_PP_COMMA() ,
#define CG_PP_NOTHING()

/* How many (type, name) pairs. An empty list is one (empty) argument, and
 * one argument is never a pair: so one argument counts as none. (ISO C has
 * no portable comma elision; this needs none.) */
#define CG_PP_NPAIRS(...) \
  CG_PP_NPAIRS_(__VA_ARGS__, 11, 11, 10, 10, 9, 9, 8, 8, 7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 0, 0)
#define CG_PP_NPAIRS_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, \
                      a20, a21, a22, n, ...)                                                        \
  n

/* m(type, name) for each pair of list, with sep() between two. */
#define CG_PP_PAIRS(m, sep, list) CG_PP_PAIRS_(m, sep, CG_PP_UNPAREN list)
#define CG_PP_PAIRS_(m, sep, ...) CG_PP_CAT(CG_PP_P, CG_PP_NPAIRS(__VA_ARGS__))(m, sep, __VA_ARGS__)
/* No parameters: each list's own word for "none" (m is pasted, not expanded). */
#define CG_PP_P0(m, sep, ...) CG_PP_NONE_##m
#define CG_PP_P1(m, sep, t, n) m(t, n)
#define CG_PP_P2(m, sep, t, n, ...) m(t, n) sep() CG_PP_P1(m, sep, __VA_ARGS__)
#define CG_PP_P3(m, sep, t, n, ...) m(t, n) sep() CG_PP_P2(m, sep, __VA_ARGS__)
#define CG_PP_P4(m, sep, t, n, ...) m(t, n) sep() CG_PP_P3(m, sep, __VA_ARGS__)
#define CG_PP_P5(m, sep, t, n, ...) m(t, n) sep() CG_PP_P4(m, sep, __VA_ARGS__)
#define CG_PP_P6(m, sep, t, n, ...) m(t, n) sep() CG_PP_P5(m, sep, __VA_ARGS__)
#define CG_PP_P7(m, sep, t, n, ...) m(t, n) sep() CG_PP_P6(m, sep, __VA_ARGS__)
#define CG_PP_P8(m, sep, t, n, ...) m(t, n) sep() CG_PP_P7(m, sep, __VA_ARGS__)
#define CG_PP_P9(m, sep, t, n, ...) m(t, n) sep() CG_PP_P8(m, sep, __VA_ARGS__)
#define CG_PP_P10(m, sep, t, n, ...) m(t, n) sep() CG_PP_P9(m, sep, __VA_ARGS__)
#define CG_PP_P11(m, sep, t, n, ...) m(t, n) sep() CG_PP_P10(m, sep, __VA_ARGS__)

#define CG_PP_DECL(t, n) t n
#define CG_PP_NAME(t, n) n
#define CG_PP_MEMBER(t, n) t n;
#define CG_PP_FIELD(t, n) args_->n
#define CG_PP_NONE_CG_PP_DECL void
#define CG_PP_NONE_CG_PP_NAME
#define CG_PP_NONE_CG_PP_MEMBER
#define CG_PP_NONE_CG_PP_FIELD

/* "CUstream s, CUstreamCaptureMode mode" */
#define CG_PARAMS(list) CG_PP_PAIRS(CG_PP_DECL, CG_PP_COMMA, list)
/* "s, mode" */
#define CG_ARGS(list) CG_PP_PAIRS(CG_PP_NAME, CG_PP_COMMA, list)
/* "CUstream s; CUstreamCaptureMode mode;" (the body of a struct of them) */
#define CG_MEMBERS(list) CG_PP_PAIRS(CG_PP_MEMBER, CG_PP_NOTHING, list)
/* "args_->s, args_->mode": the arguments back out of such a struct */
#define CG_FIELDS(list) CG_PP_PAIRS(CG_PP_FIELD, CG_PP_COMMA, list)

#endif
