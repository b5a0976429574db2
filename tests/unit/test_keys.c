/* test_keys.c -- src/keys.c: every key namespaced exactly once, daily
 * stat keys on the UTC date, in-progress keys that parse back, and SCAN
 * patterns that escape glob characters of the namespace. */
#include "unit_helpers.h"

#include <fnmatch.h>
#include "keys.h"
#include "util.h"

#define ID "worker-7.example.com:12345:b88a8d690349"

/* Every builder, for one namespace; expected = prefix + bare name. */
static void check_all_builders(const char *ns, const char *prefix) {
    hh__keys k;
    assert_int_equal(hh__keys_init(&k, ns), 0);
    struct {
        sds got;
        const char *bare;
    } cases[] = {
        {hh__key(&k, HH_K_QUEUES), "queues"},
        {hh__key(&k, HH_K_SCHEDULE), "schedule"},
        {hh__key(&k, HH_K_RETRY), "retry"},
        {hh__key(&k, HH_K_DEAD), "dead"},
        {hh__key(&k, HH_K_PROCESSES), "processes"},
        {hh__key(&k, HH_K_STAT_PROCESSED), "stat:processed"},
        {hh__key(&k, HH_K_FETCHERS), "hiredhand:fetchers"},
        {hh__key_queue(&k, "x"), "queue:x"},
        {hh__key_queue(&k, "a:b"), "queue:a:b"},
        {hh__key_process(&k, ID), ID},
        {hh__key_work(&k, ID), ID ":work"},
        {hh__key_workers(&k, ID), ID ":workers"},
        {hh__key_signals(&k, ID), ID "-signals"},
        {hh__key_stat_daily(&k, HH_K_STAT_FAILED, 0.0), "stat:failed:1970-01-01"},
        {hh__key_inprogress(&k, ID, "low"), "hiredhand:inprogress:" ID "|low"},
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
        /* hh__key_strip gives the bare name back */
        const char *bare = hh__key_strip(&k, cases[i].got);
        assert_non_null(bare);
        assert_string_equal(bare, cases[i].bare);
        sdsfree(cases[i].got);
    }
    hh__keys_free(&k);
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
    hh__keys k;
    assert_int_equal(hh__keys_init(&k, "ns"), 0);
    assert_null(hh__key_strip(&k, "queue:x"));
    assert_null(hh__key_strip(&k, "ns2:queue:x"));
    assert_null(hh__key_strip(&k, "nsqueue:x"));
    assert_string_equal(hh__key_strip(&k, "ns:queue:x"), "queue:x");
    hh__keys_free(&k);
}

static void check_daily(double epoch, const char *want) {
    hh__keys k;
    assert_int_equal(hh__keys_init(&k, "ns"), 0);
    sds d = hh__key_stat_daily(&k, HH_K_STAT_PROCESSED, epoch);
    char full[64];
    snprintf(full, sizeof(full), "ns:stat:processed:%s", want);
    assert_string_equal(d, full);
    sdsfree(d);
    hh__keys_free(&k);
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
        check_daily(1795962147.0172818, "2026-11-29"); /* 14:22:27Z */
        check_daily(1700000000.0, "2023-11-14");       /* 22:13:20Z: +14 is already the 15th */
        check_daily(1700010000.0, "2023-11-15");       /* 01:00:00Z: -12 is still the 14th */
        check_daily(1709164800.0, "2024-02-29");       /* leap day, 00:00:00Z */
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
    hh__keys k;
    assert_int_equal(hh__keys_init(&k, ns), 0);
    sds key = hh__key_inprogress(&k, id, queue);
    assert_non_null(key);
    sds gid = NULL, gq = NULL;
    assert_int_equal(hh__key_inprogress_parse(&k, key, &gid, &gq), 0);
    assert_string_equal(gid, id);
    assert_string_equal(gq, queue);
    sdsfree(gid);
    sdsfree(gq);
    /* the key also matches the SCAN pattern the recoverer uses */
    sds pat = hh__key_inprogress_pattern(&k);
    assert_int_equal(fnmatch(pat, key, 0), 0);
    sdsfree(pat);
    sdsfree(key);
    hh__keys_free(&k);
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
    hh__keys k;
    assert_int_equal(hh__keys_init(&k, ns), 0);
    sds id = NULL, q = NULL;
    if (hh__key_inprogress_parse(&k, key, &id, &q) != -1)
        fail_msg("parse accepted \"%s\" (ns \"%s\") as id=\"%s\" queue=\"%s\"", key, ns, id, q);
    hh__keys_free(&k);
}

static void test_inprogress_parse_rejects_foreign(void **s) {
    (void)s;
    parse_rejects("ns", "ns:queue:default");
    parse_rejects("ns", "ns:hiredhand:inprogress:");
    parse_rejects("ns", "ns:hiredhand:inprogress:idonly");
    parse_rejects("ns", "ns:hiredhand:inprogress:|default");
    parse_rejects("ns", "ns:hiredhand:inprogress:id|");
    parse_rejects("ns", "hiredhand:inprogress:id|default");       /* no namespace */
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
    hh__keys k;
    assert_int_equal(hh__keys_init(&k, ""), 0);
    sds p = hh__key_inprogress_pattern(&k);
    assert_string_equal(p, "hiredhand:inprogress:*");
    sdsfree(p);
    hh__keys_free(&k);

    assert_int_equal(hh__keys_init(&k, "n*s?[x]\\y"), 0);
    p = hh__key_inprogress_pattern(&k);
    assert_string_equal(p, "n\\*s\\?\\[x\\]\\\\y:hiredhand:inprogress:*");
    /* Redis' stringmatchlen and fnmatch agree on these escapes: the pattern
     * matches our own keys and not another namespace the raw glob would. */
    sds own = hh__key_inprogress(&k, "id", "q");
    assert_int_equal(fnmatch(p, own, 0), 0);
    assert_int_not_equal(fnmatch(p, "nZZsQx\\y:hiredhand:inprogress:id|q", 0), 0);
    assert_int_not_equal(fnmatch(p, "nZZsQx\\y:hiredhand:inprogress:id|q", FNM_NOESCAPE), 0);
    assert_int_not_equal(fnmatch(p, "n*s?[x]\\y:queue:default", 0), 0);
    sdsfree(own);
    sdsfree(p);
    hh__keys_free(&k);
}

/* ------------------------------------------------------------ names */

static void refused(hh_name_kind kind, const char *name, const char *needle) {
    char why[512] = "";
    if (hh_name_check(kind, name, why, sizeof(why)) != HH_ERR_INVALID)
        fail_msg("kind %d name \"%s\" was accepted", (int)kind, name ? name : "(null)");
    if (!strstr(why, needle)) fail_msg("\"%s\": reason \"%s\" lacks \"%s\"", name ? name : "(null)", why, needle);
}

static void accepted(hh_name_kind kind, const char *name) {
    char why[512] = "";
    if (hh_name_check(kind, name, why, sizeof(why)) != HH_OK)
        fail_msg("kind %d name \"%s\" was refused: %s", (int)kind, name, why);
}

/* Identities whose keys (<id>, <id>:work, <id>:workers, <id>-signals)
 * would be Sidekiq's or hiredhand's, or another process's, are refused
 * with the reason; the usual shapes are accepted. */
static void test_identity_rule(void **s) {
    (void)s;
    /* identities that would collide with Sidekiq's own keys */
    refused(HH_NAME_IDENTITY, "queue:default", "starts with \"queue:\"");
    refused(HH_NAME_IDENTITY, "retry", "Sidekiq's retry set");
    refused(HH_NAME_IDENTITY, "dead", "Sidekiq's dead set");
    refused(HH_NAME_IDENTITY, "schedule", "Sidekiq's scheduled set");
    refused(HH_NAME_IDENTITY, "queue", "Sidekiq's queues");
    /* every other reserved name and family */
    const char *names[] = {"queues", "processes",       "process_cleanup", "stat", "dear-leader",
                           "paused", "super_processes", "profiles",        "j",    "h",
                           "it",     "deploylock",      "hiredhand"};
    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) refused(HH_NAME_IDENTITY, names[i], "own");
    refused(HH_NAME_IDENTITY, "stat:processed", "starts with \"stat:\"");
    refused(HH_NAME_IDENTITY, "hiredhand:fetchers", "starts with \"hiredhand:\"");
    refused(HH_NAME_IDENTITY, "retry:x", "starts with \"retry:\"");
    refused(HH_NAME_IDENTITY, "j|20261129|9:5", "'|'");
    refused(HH_NAME_IDENTITY, "j:x", "starts with \"j:\"");
    refused(HH_NAME_IDENTITY, "it-0123", "starts with \"it-\"");
    refused(HH_NAME_IDENTITY, "deploylock-v1", "starts with \"deploylock-\"");
    /* another process's keys */
    refused(HH_NAME_IDENTITY, "host:1:abc:work", "ends with \":work\"");
    refused(HH_NAME_IDENTITY, "host:1:abc:workers", "ends with \":workers\"");
    refused(HH_NAME_IDENTITY, "host:1:abc-signals", "ends with \"-signals\"");
    /* Sidekiq 7/8 metrics keys without a family prefix */
    refused(HH_NAME_IDENTITY, "OkWorker-29-14:27", "metrics");
    refused(HH_NAME_IDENTITY, "OkWorker-29-14:5", "metrics");
    refused(HH_NAME_IDENTITY, "20261129-marks", "metrics");
    refused(HH_NAME_IDENTITY, "tok-47585b590c2486eae7138aff", "metrics");
    /* characters and length */
    refused(HH_NAME_IDENTITY, "", "empty");
    refused(HH_NAME_IDENTITY, "a|b", "'|'");
    refused(HH_NAME_IDENTITY, "a b", "space");
    refused(HH_NAME_IDENTITY, "a\nb", "control");
    refused(HH_NAME_IDENTITY, "a\tb", "control");
    refused(HH_NAME_IDENTITY, "a\x1b[31m", "control");
    refused(HH_NAME_IDENTITY, "a\xff", "UTF-8");
    char long_id[HH_NAME_MAX + 2];
    memset(long_id, 'a', sizeof(long_id) - 1);
    long_id[sizeof(long_id) - 1] = '\0';
    refused(HH_NAME_IDENTITY, long_id, "longer than 200");
    long_id[HH_NAME_MAX] = '\0';
    accepted(HH_NAME_IDENTITY, long_id);
    refused(HH_NAME_IDENTITY, NULL, "no identity");

    /* accepted: Sidekiq's own shape, StatefulSet and systemd names, names
     * that merely begin like a reserved one */
    accepted(HH_NAME_IDENTITY, "host:1234:0123456789ab");
    accepted(HH_NAME_IDENTITY, ID);
    accepted(HH_NAME_IDENTITY, "worker-0");
    accepted(HH_NAME_IDENTITY, "hiredhand@2.service");
    accepted(HH_NAME_IDENTITY, "queue-worker-0");
    accepted(HH_NAME_IDENTITY, "retry-worker-1");
    accepted(HH_NAME_IDENTITY, "queues2");
    accepted(HH_NAME_IDENTITY, "statsd");
    accepted(HH_NAME_IDENTITY, "item-1");
    accepted(HH_NAME_IDENTITY, "h1:22:abc");
    accepted(HH_NAME_IDENTITY, "Queue:default"); /* keys are case-sensitive */
    accepted(HH_NAME_IDENTITY, "w\xc3\xa9rker-0");
}

static void test_other_names(void **s) {
    (void)s;
    refused(HH_NAME_NAMESPACE, "queue", "Sidekiq's queues");
    refused(HH_NAME_NAMESPACE, "stat", "statistics");
    refused(HH_NAME_NAMESPACE, "hiredhand:x", "starts with \"hiredhand:\"");
    refused(HH_NAME_NAMESPACE, "my app", "space");
    accepted(HH_NAME_NAMESPACE, "myapp");
    accepted(HH_NAME_NAMESPACE, "myapp:prod");
    accepted(HH_NAME_NAMESPACE, "worker-0:work"); /* a namespace's keys are <ns>:..., not <id>:work */
    refused(HH_NAME_QUEUE, "", "empty");
    refused(HH_NAME_QUEUE, "a|b", "'|'");
    refused(HH_NAME_QUEUE, "a\nb", "control");
    accepted(HH_NAME_QUEUE, "default");
    accepted(HH_NAME_QUEUE, "retry"); /* queue:retry is a queue like any */
    accepted(HH_NAME_QUEUE, "my queue");
    char q[HH_NAME_QUEUE_MAX + 2];
    memset(q, 'q', sizeof(q) - 1);
    q[sizeof(q) - 1] = '\0';
    refused(HH_NAME_QUEUE, q, "longer than 1024");
    q[HH_NAME_QUEUE_MAX] = '\0';
    accepted(HH_NAME_QUEUE, q); /* Sidekiq takes long names: a key is no short string to Redis */
    refused(HH_NAME_TAG, "t\x1b[2J", "control");
    refused(HH_NAME_LABEL, "\xc3", "UTF-8");
    accepted(HH_NAME_TAG, "");
    accepted(HH_NAME_TAG, "app 1 | blue");
    accepted(HH_NAME_LABEL, "r\xc3\xa9gion: eu");
}

static char logged[1024];
static void capture(hh_log_level level, const char *msg, void *udata) {
    (void)level, (void)udata;
    hh__strlcpy(logged, msg, sizeof(logged));
}

/* hh_manager_new refuses such names with the reason in its log */
static void test_manager_refuses_names(void **s) {
    (void)s;
    struct {
        const char *identity, *ns, *tag, *needle;
    } cases[] = {
        {"queue:default", NULL, NULL, "starts with \"queue:\""},
        {"retry", NULL, NULL, "retry set"},
        {"queue", NULL, NULL, "Sidekiq's queues"},
        {"worker-0", "stat", NULL, "bad namespace"},
        {"worker-0", NULL, "a\nb", "bad tag"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        hh_manager_options o;
        hh_manager_options_init(&o);
        o.redis.url = "redis://127.0.0.1:1/0";
        o.identity = cases[i].identity;
        o.redis.ns = cases[i].ns;
        o.tag = cases[i].tag;
        o.log = capture;
        logged[0] = '\0';
        int err = 0;
        hh_manager *m = hh_manager_new(&o, &err);
        if (m) fail_msg("case %zu accepted", i);
        assert_int_equal(err, HH_ERR_INVALID);
        if (!strstr(logged, cases[i].needle)) fail_msg("case %zu logged \"%s\"", i, logged);
    }
    hh_manager_options o;
    hh_manager_options_init(&o);
    o.redis.url = "redis://127.0.0.1:1/0";
    o.identity = "worker-0";
    o.log = capture;
    int err = 0;
    hh_manager *m = hh_manager_new(&o, &err);
    assert_non_null(m);
    assert_string_equal(hh_manager_identity(m), "worker-0");
    hh_manager_free(m);
    o.identity = NULL; /* host:pid:nonce */
    m = hh_manager_new(&o, &err);
    assert_non_null(m);
    hh_manager_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_namespace_applied_once),
        cmocka_unit_test(test_identity_rule),
        cmocka_unit_test(test_other_names),
        cmocka_unit_test(test_manager_refuses_names),
        cmocka_unit_test(test_empty_namespace_no_prefix),
        cmocka_unit_test(test_key_strip_foreign),
        cmocka_unit_test(test_daily_stat_key_utc),
        cmocka_unit_test(test_inprogress_roundtrip),
        cmocka_unit_test(test_inprogress_parse_rejects_foreign),
        cmocka_unit_test(test_scan_pattern_escapes_glob),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
