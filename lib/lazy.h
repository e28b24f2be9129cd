/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Libraries loaded on first use instead of at program start (lazy.c).
 *
 * libarchive (which brings libxml2, ICU and libstdc++), libcrypto, libbpf and
 * liblzma serve images, actions, device leases and VM kernels; a plain run
 * needs none of them, yet as DT_NEEDED entries the dynamic loader mapped and
 * relocated all of them in every process that links the library: most of a
 * CLI start (issue 18). They are dlopen'd by soname the first time a function
 * of theirs is needed.
 *
 * A file that uses one includes the library's own header, then this one, then
 * the lazy-<lib>.h list that turns each of the library's function names into
 * a call through a pointer resolved once per call site (FY_LAZY). An entry
 * point checks lazy_open() first and turns a failure into a typed error;
 * a call without that check on a host without the library is a bug and
 * aborts with the library's name rather than jumping through NULL. */
#ifndef FY_LAZY_H
#define FY_LAZY_H

#include <stdbool.h>
#include <stddef.h>

struct lazylib {
    const char *soname;
    bool tried; /* dlopen was called (under lazy.c's lock) */
    void *handle;
    char why[200]; /* dlerror() when it could not be loaded */
};

extern struct lazylib lazy_archive, lazy_crypto, lazy_bpf, lazy_lzma;

/* Loads the library once (thread-safe). 0, or -1 with l->why set. */
int lazy_open(struct lazylib *l);
/* The address of one of its functions; aborts when there is none. */
void *lazy_sym(struct lazylib *l, const char *name);

/* The function NAME of library LIB, resolved once per call site. Inside the
 * expansion NAME is not expanded again, so __typeof__ sees the declaration of
 * the library's header. */
#define FY_LAZY(lib, name)                                                                                             \
    (*__extension__({                                                                                                  \
        static __typeof__(&name) fy_lazy_p_;                                                                           \
        __typeof__(&name) fy_lazy_q_ = __atomic_load_n(&fy_lazy_p_, __ATOMIC_ACQUIRE);                                 \
        if (!fy_lazy_q_) {                                                                                             \
            void *fy_lazy_v_ = lazy_sym(&(lib), #name);                                                             \
            __builtin_memcpy(&fy_lazy_q_, &fy_lazy_v_, sizeof(fy_lazy_q_));                                            \
            __atomic_store_n(&fy_lazy_p_, fy_lazy_q_, __ATOMIC_RELEASE);                                               \
        }                                                                                                              \
        fy_lazy_q_;                                                                                                    \
    }))

#endif

/* The functions of each library the library calls, bound through FY_LAZY when
 * the library's header was included first. */
#if defined(ARCHIVE_H_INCLUDED) && !defined(FY_LAZY_ARCHIVE_H_INCLUDED)
#define FY_LAZY_ARCHIVE_H_INCLUDED
#define archive_errno FY_LAZY(lazy_archive, archive_errno)
#define archive_error_string FY_LAZY(lazy_archive, archive_error_string)
#define archive_filter_code FY_LAZY(lazy_archive, archive_filter_code)
#define archive_filter_count FY_LAZY(lazy_archive, archive_filter_count)
#define archive_read_data FY_LAZY(lazy_archive, archive_read_data)
#define archive_read_data_block FY_LAZY(lazy_archive, archive_read_data_block)
#define archive_read_free FY_LAZY(lazy_archive, archive_read_free)
#define archive_read_new FY_LAZY(lazy_archive, archive_read_new)
#define archive_read_next_header FY_LAZY(lazy_archive, archive_read_next_header)
#define archive_read_open FY_LAZY(lazy_archive, archive_read_open)
#define archive_read_open2 FY_LAZY(lazy_archive, archive_read_open2)
#define archive_read_support_filter_bzip2 FY_LAZY(lazy_archive, archive_read_support_filter_bzip2)
#define archive_read_support_filter_gzip FY_LAZY(lazy_archive, archive_read_support_filter_gzip)
#define archive_read_support_filter_lz4 FY_LAZY(lazy_archive, archive_read_support_filter_lz4)
#define archive_read_support_filter_none FY_LAZY(lazy_archive, archive_read_support_filter_none)
#define archive_read_support_filter_xz FY_LAZY(lazy_archive, archive_read_support_filter_xz)
#define archive_read_support_filter_zstd FY_LAZY(lazy_archive, archive_read_support_filter_zstd)
#define archive_read_support_format_cpio FY_LAZY(lazy_archive, archive_read_support_format_cpio)
#define archive_read_support_format_raw FY_LAZY(lazy_archive, archive_read_support_format_raw)
#define archive_read_support_format_tar FY_LAZY(lazy_archive, archive_read_support_format_tar)
#define archive_set_error FY_LAZY(lazy_archive, archive_set_error)
#endif
#if defined(ARCHIVE_ENTRY_H_INCLUDED) && !defined(FY_LAZY_ARCHIVE_ENTRY_H_INCLUDED)
#define FY_LAZY_ARCHIVE_ENTRY_H_INCLUDED
#define archive_entry_filetype FY_LAZY(lazy_archive, archive_entry_filetype)
#define archive_entry_gid FY_LAZY(lazy_archive, archive_entry_gid)
#define archive_entry_hardlink FY_LAZY(lazy_archive, archive_entry_hardlink)
#define archive_entry_mtime FY_LAZY(lazy_archive, archive_entry_mtime)
#define archive_entry_pathname FY_LAZY(lazy_archive, archive_entry_pathname)
#define archive_entry_perm FY_LAZY(lazy_archive, archive_entry_perm)
#define archive_entry_rdevmajor FY_LAZY(lazy_archive, archive_entry_rdevmajor)
#define archive_entry_rdevminor FY_LAZY(lazy_archive, archive_entry_rdevminor)
#define archive_entry_size FY_LAZY(lazy_archive, archive_entry_size)
#define archive_entry_size_is_set FY_LAZY(lazy_archive, archive_entry_size_is_set)
#define archive_entry_symlink FY_LAZY(lazy_archive, archive_entry_symlink)
#define archive_entry_uid FY_LAZY(lazy_archive, archive_entry_uid)
#endif
#if defined(OPENSSL_EVP_H) && !defined(FY_LAZY_OPENSSL_EVP_H)
#define FY_LAZY_OPENSSL_EVP_H
#define EVP_DigestFinal_ex FY_LAZY(lazy_crypto, EVP_DigestFinal_ex)
#define EVP_DigestInit_ex FY_LAZY(lazy_crypto, EVP_DigestInit_ex)
#define EVP_DigestUpdate FY_LAZY(lazy_crypto, EVP_DigestUpdate)
#define EVP_MD_CTX_free FY_LAZY(lazy_crypto, EVP_MD_CTX_free)
#define EVP_MD_CTX_new FY_LAZY(lazy_crypto, EVP_MD_CTX_new)
#define EVP_sha256 FY_LAZY(lazy_crypto, EVP_sha256)
#endif
#if defined(__LIBBPF_BPF_H) && !defined(FY_LAZY___LIBBPF_BPF_H)
#define FY_LAZY___LIBBPF_BPF_H
#define bpf_prog_attach FY_LAZY(lazy_bpf, bpf_prog_attach)
#define bpf_prog_load FY_LAZY(lazy_bpf, bpf_prog_load)
#endif
#if defined(LZMA_H) && !defined(FY_LAZY_LZMA_H)
#define FY_LAZY_LZMA_H
#define lzma_code FY_LAZY(lazy_lzma, lzma_code)
#define lzma_end FY_LAZY(lazy_lzma, lzma_end)
#define lzma_stream_decoder FY_LAZY(lazy_lzma, lzma_stream_decoder)
#endif
