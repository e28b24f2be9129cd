/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libforgeyard-sandbox: export macro and shared helpers of the public API. */
#ifndef FORGEYARD_FY_COMMON_H
#define FORGEYARD_FY_COMMON_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32) && !defined(FY_STATIC)
#  if defined(FY_BUILDING)
#    define FY_API __declspec(dllexport)
#  else
#    define FY_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) || defined(__clang__)
#  define FY_API __attribute__((visibility("default")))
#else
#  define FY_API
#endif

#ifdef __cplusplus
#  define FY_BEGIN_DECLS extern "C" {
#  define FY_END_DECLS }
#else
#  define FY_BEGIN_DECLS
#  define FY_END_DECLS
#endif

/* Defines fy_<type>_freep() for use with __attribute__((cleanup)).
 * It is a static inline function, so the macro exists in C99 and later, in
 * C++, and in GNU C89 (gcc/clang -std=c89 or -ansi, as __inline__, which is
 * also where the cleanup attribute exists). A strict C89 compiler without
 * GNU extensions gets no FY_DEFINE_CLEANUP; the rest of the headers compile
 * as C89 either way. */
#if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)
#  define FY_DEFINE_CLEANUP(type)                                            \
    static inline void type##_freep(type **p) { type##_free(*p); *p = NULL; }
#elif defined(__GNUC__) || defined(__clang__)
#  define FY_DEFINE_CLEANUP(type)                                            \
    static __inline__ void type##_freep(type **p) { type##_free(*p); *p = NULL; }
#endif

/* The value of a limit that is not limited. */
#define FY_UNLIMITED UINT64_MAX

FY_BEGIN_DECLS

/* Frees a string or buffer the library returned to the caller (JSON
 * renderings). NULL is accepted. */
FY_API void fy_free(void *ptr);

FY_END_DECLS

#endif
