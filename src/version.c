/* version.c -- the library's version at run time (hiredhand_version.h is
 * generated from CMakeLists.txt's project version). No Redis keys. */
#include "hiredhand.h"

const char *hh_version(void) { return HH_VERSION; }
