/* abi.h -- reads the public structs that can grow (hiredhand.h, "Structs
 * that can grow") as the caller laid them out: only the struct_size bytes
 * the caller has, the rest left at its default. No Redis keys. */
#ifndef HH_ABI_H
#define HH_ABI_H

#include "hiredhand.h"

/* Each fills *dst (this library's full layout, struct_size = sizeof) from
 * the caller's *src; src NULL gives the defaults. */
void hh__redis_options_read(hh_redis_options *dst, const hh_redis_options *src);
void hh__push_options_read(hh_push_options *dst, const hh_push_options *src);
void hh__manager_options_read(hh_manager_options *dst, const hh_manager_options *src);
/* Copies a full snapshot into the caller's *out, its struct_size bytes. */
void hh__manager_stats_write(hh_manager_stats *out, const hh_manager_stats *full);

#endif
