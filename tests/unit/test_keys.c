/* test_keys.c -- src/keys.c: every key namespaced exactly once (B19), daily
 * stat keys on the UTC date, in-progress keys that parse back, and SCAN
 * patterns that escape glob characters of the namespace. */
#include "unit_helpers.h"

#include <fnmatch.h>
#include "keys.h"

#define ID "worker-7.example.com:12345:b88a8d690349"

/* Every builder, for one namespace; expected = prefix + bare name. */
static void check_all_builders(const char *ns, const char *prefix) {
    hh_keys k;
    assert_int_equal(hh_keys_init(&k, ns), 0);
    struct {
        sds got;
        const char *bare;
    } cases[] = {
        {hh_key(&k, HH_K_QUEUES), "queues"},
        {hh_key(&k, HH_K_SCHEDULE), "schedule"},
        {hh_key(&k, HH_K_RETRY), "retry"},
        {hh_key(&k, HH_K_DEAD), "dead"},
        {hh_key(&k, HH_K_PROCESSES), "processes"},
        {hh_key(&k, HH_K_STAT_PROCESSED), "stat:processed"},
        {hh_key(&k, HH_K_FETCHERS), "hiredhand:fetchers"},
        {hh_key_queue(&k, "x"), "queue:x"},
        {hh_key_queue(&k, "a:b"), "queue:a:b"},
        {hh_key_process(&k, ID), ID},
        {hh_key_work(&k, ID), ID ":work"},
        {hh_key_workers(&k, ID), ID ":workers"},
        {hh_key_signals(&k, ID), ID "-signals"},
        {hh_key_stat_daily(&k, HH_K_STAT_FAILED, 0.0), "stat:failed:1970-01-01"},
        {hh_key_inprogress(&k, ID, "low"), "hiredhand:inprogress:" ID "|low"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char want[512];
        snprintf(want, sizeof(want), "%s%s", prefix, cases[i].bare);
        assert_non_null(cases[i].got);
        assert_string_equal(cases[i].got, want);
        assert_int_equal(sdslen(cases[i].got), strlen(want));
        if (ns && *ns) {
            char twice[64];
            snprintf(twice, sizeof(twice), "%s:%s:", ns, ns);
            assert_null(strstr(cases[i].got, twice));
        } else {
            assert_true(cases[i].got[0] != ':');
        }
        /* hh_key_strip gives the bare name back */
        const char *bare = hh_key_strip(&k, cases[i].got);
        assert_non_null(bare);
        assert_string_equal(bare, cases[i].bare);
        sdsfree(cases[i].got);
    }
    hh_keys_free(&k);
}

static void test_namespace_applied_once(void **s) {
    (void)s;
    check_all_builders("ns", "ns:");
    check_all_builders("my-app.v2", "my-app.v2:");
}

static void test_empty_namespace_no_prefix(void **s) {
    (void)s;
    check_all_builders("", "");
    check_all_builders(NULL, "");
}

static void test_key_strip_foreign(void **s) {
    (void)s;
    hh_keys k;
    assert_int_equal(hh_keys_init(&k, "ns"), 0);
    assert_null(hh_key_strip(&k, "queue:x"));
    assert_null(hh_key_strip(&k, "ns2:queue:x"));
    assert_null(hh_key_strip(&k, "nsqueue:x"));
    assert_string_equal(hh_key_strip(&k, "ns:queue:x"), "queue:x");
    hh_keys_free(&k);
}

static void check_daily(double epoch, const char *want) {
    hh_keys k;
    assert_int_equal(hh_keys_init(&k, "ns"), 0);
    sds d = hh_key_stat_daily(&k, HH_K_STAT_PROCESSED, epoch);
    char full[64];
    snprintf(full, sizeof(full), "ns:stat:processed:%s", want);
    assert_string_equal(d, full);
    sdsfree(d);
    hh_keys_free(&k);
}

static void test_daily_stat_key_utc(void **s) {
    (void)s;
    char *old = getenv("TZ") ? strdup(getenv("TZ")) : NULL;
    /* Local zones far from UTC on both sides (POSIX TZ strings: no tzdata
     * needed). The key must follow the UTC date in every one of them. */
    const char *zones[] = {"UTC0", "XXX-14", "YYY+12", "ZZZ-05:30"};
    for (size_t z = 0; z < sizeof(zones) / sizeof(zones[0]); z++) {
        setenv("TZ", zones[z], 1);
        tzset();
        check_daily(0.0, "1970-01-01");
        check_daily(86399.999, "1970-01-01");
        check_daily(86400.0, "1970-01-02");
        check_daily(1795962147.0172818, "2026-11-29");  /* 14:22:27Z */
        check_daily(1700000000.0, "2023-11-14");        /* 22:13:20Z: +14 is already the 15th */
        check_daily(1700010000.0, "2023-11-15");        /* 01:00:00Z: -12 is still the 14th */
        check_daily(1709164800.0, "2024-02-29");        /* leap day, 00:00:00Z */
    }
    if (old) {
        setenv("TZ", old, 1);
        free(old);
    } else {
        unsetenv("TZ");
    }
    tzset();
}

static void roundtrip(const char *ns, const char *id, const char *queue) {
    hh_keys k;
    assert_int_equal(hh_keys_init(&k, ns), 0);
    sds key = hh_key_inprogress(&k, id, queue);
    assert_non_null(key);
    sds gid = NULL, gq = NULL;
    assert_int_equal(hh_key_inprogress_parse(&k, key, &gid, &gq), 0);
    assert_string_equal(gid, id);
    assert_string_equal(gq, queue);
    sdsfree(gid);
    sdsfree(gq);
    /* the key also matches the SCAN pattern the recoverer uses */
    sds pat = hh_key_inprogress_pattern(&k);
    assert_int_equal(fnmatch(pat, key, 0), 0);
    sdsfree(pat);
    sdsfree(key);
    hh_keys_free(&k);
}

static void test_inprogress_roundtrip(void **s) {
    (void)s;
    roundtrip("ns", ID, "default");
    roundtrip("", ID, "default");
    roundtrip(NULL, "fixed-name", "a:b:c");
    roundtrip("ns", "host:1:2:3:4", "queue:with:colons");
    roundtrip("a:b", "x", "y");
    roundtrip("ns", "id", "q|with|bars"); /* the first '|' separates */
}

static void parse_rejects(const char *ns, const char *key) {
    hh_keys k;
    assert_int_equal(hh_keys_init(&k, ns), 0);
    sds id = NULL, q = NULL;
    if (hh_key_inprogress_parse(&k, key, &id, &q) != -1)
        fail_msg("parse accepted \"%s\" (ns \"%s\") as id=\"%s\" queue=\"%s\"", key, ns, id, q);
    hh_keys_free(&k);
}

static void test_inprogress_parse_rejects_foreign(void **s) {
    (void)s;
    parse_rejects("ns", "ns:queue:default");
    parse_rejects("ns", "ns:hiredhand:inprogress:");
    parse_rejects("ns", "ns:hiredhand:inprogress:idonly");
    parse_rejects("ns", "ns:hiredhand:inprogress:|default");
    parse_rejects("ns", "ns:hiredhand:inprogress:id|");
    parse_rejects("ns", "hiredhand:inprogress:id|default");      /* no namespace */
    parse_rejects("ns", "other:hiredhand:inprogress:id|default"); /* other namespace */
    parse_rejects("ns", "ns2:hiredhand:inprogress:id|default");
    parse_rejects("ns", "ns:ns:hiredhand:inprogress:id|default");
    parse_rejects("", "ns:hiredhand:inprogress:id|default");
    parse_rejects("", "queue:x");
    parse_rejects("", "hiredhand:fetchers");
    parse_rejects("", "hiredhand:inprogressX:id|q");
}

static void test_scan_pattern_escapes_glob(void **s) {
    (void)s;
    hh_keys k;
    assert_int_equal(hh_keys_init(&k, ""), 0);
    sds p = hh_key_inprogress_pattern(&k);
    assert_string_equal(p, "hiredhand:inprogress:*");
    sdsfree(p);
    hh_keys_free(&k);

    assert_int_equal(hh_keys_init(&k, "n*s?[x]\\y"), 0);
    p = hh_key_inprogress_pattern(&k);
    assert_string_equal(p, "n\\*s\\?\\[x\\]\\\\y:hiredhand:inprogress:*");
    /* Redis' stringmatchlen and fnmatch agree on these escapes: the pattern
     * matches our own keys and not another namespace the raw glob would. */
    sds own = hh_key_inprogress(&k, "id", "q");
    assert_int_equal(fnmatch(p, own, 0), 0);
    assert_int_not_equal(fnmatch(p, "nZZsQx\\y:hiredhand:inprogress:id|q", 0), 0);
    assert_int_not_equal(fnmatch(p, "nZZsQx\\y:hiredhand:inprogress:id|q", FNM_NOESCAPE), 0);
    assert_int_not_equal(fnmatch(p, "n*s?[x]\\y:queue:default", 0), 0);
    sdsfree(own);
    sdsfree(p);
    hh_keys_free(&k);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_namespace_applied_once),
        cmocka_unit_test(test_empty_namespace_no_prefix),
        cmocka_unit_test(test_key_strip_foreign),
        cmocka_unit_test(test_daily_stat_key_utc),
        cmocka_unit_test(test_inprogress_roundtrip),
        cmocka_unit_test(test_inprogress_parse_rejects_foreign),
        cmocka_unit_test(test_scan_pattern_escapes_glob),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
