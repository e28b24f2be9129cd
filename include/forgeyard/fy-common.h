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

/* Defines fy_<type>_freep() for use with __attribute__((cleanup)). */
#define FY_DEFINE_CLEANUP(type)                                              \
    static inline void type##_freep(type **p) { type##_free(*p); *p = NULL; }

/* The value of a limit that is not limited. */
#define FY_UNLIMITED UINT64_MAX

FY_BEGIN_DECLS

/* Frees a string or buffer the library returned to the caller (JSON
 * renderings). NULL is accepted. */
FY_API void fy_free(void *ptr);

FY_END_DECLS

#endif
