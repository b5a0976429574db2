/* test_version.c -- hh_version() at run time agrees with the version
 * macros generated from CMakeLists.txt (hiredhand_version.h), and
 * HH_VERSION_NUM packs them as 0xMMmmpp. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "hiredhand.h"

static void test_version_matches_macros(void **s) {
    (void)s;
    char want[64];
    snprintf(want, sizeof(want), "%d.%d.%d", HH_VERSION_MAJOR, HH_VERSION_MINOR, HH_VERSION_PATCH);
    assert_string_equal(hh_version(), want);
    assert_string_equal(HH_VERSION, want);
    assert_int_equal(HH_VERSION_NUM, (HH_VERSION_MAJOR << 16) | (HH_VERSION_MINOR << 8) | HH_VERSION_PATCH);
    assert_true(HH_VERSION_MINOR >= 0 && HH_VERSION_MINOR <= 255);
    assert_true(HH_VERSION_PATCH >= 0 && HH_VERSION_PATCH <= 255);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_version_matches_macros)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
