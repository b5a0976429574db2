/* test_util.c -- src/util.c: control characters escaped in every log
 * message (a payload's class, jid or error text cannot forge log lines),
 * at the one place every message passes; the /proc/<pid>/stat reader
 * behind the identity's liveness check and the process_* metrics. */
#include "unit_helpers.h"

#include "util.h"

static char *esc(const char *s, size_t len) {
    char *o = hh__escape_ctl(s, len);
    assert_non_null(o);
    return o;
}

/* Bytes that are not UTF-8 become \xNN text (the logs) or U+FFFD (a
 * page); valid sequences, NUL included, stay as they are. */
static void test_utf8_rewrites(void **s) {
    (void)s;
    static const char in[] = "a\xff\xc3\xa9\0b\xe2\x82";
    size_t n = 0;
    char *e = hh__utf8_escape_len(in, sizeof(in) - 1, &n);
    assert_non_null(e);
    assert_int_equal(n, 17);
    assert_memory_equal(e, "a\\xff\xc3\xa9\0b\\xe2\\x82", 17);
    free(e);
    char *r = hh__utf8_replace_len(in, sizeof(in) - 1, &n);
    assert_non_null(r);
    assert_int_equal(n, 14);
    assert_memory_equal(r, "a\xef\xbf\xbd\xc3\xa9\0b\xef\xbf\xbd\xef\xbf\xbd", 14);
    free(r);
    r = hh__utf8_replace_len("", 0, &n);
    assert_non_null(r);
    assert_int_equal(n, 0);
    free(r);
}

static void test_escape_ctl(void **s) {
    (void)s;
    char *o = esc("a\nb\rc\td\x1b[31m\x7f", 13);
    assert_string_equal(o, "a\\nb\\rc\\td\\x1b[31m\\x7f");
    free(o);
    o = esc("T\0Evil", 6); /* NUL kept visible */
    assert_string_equal(o, "T\\x00Evil");
    free(o);
    /* UTF-8 kept, C1 controls (U+009B is CSI to some terminals) escaped,
     * bytes that are not UTF-8 escaped, backslashes left alone */
    o = esc("caf\xc3\xa9 \xe2\x82\xac \xc2\x9b"
            "2J \xff\xc3 \\n",
            20);
    assert_string_equal(o,
                        "caf\xc3\xa9 \xe2\x82\xac \\u009b"
                        "2J \\xff\\xc3 \\n");
    free(o);
    assert_int_equal(hh__needs_escape("plain text: 1.5 \xc3\xa9", 18), 0);
    assert_int_equal(hh__needs_escape("a\nb", 3), 1);
    assert_int_equal(hh__needs_escape("\xc2\x85", 2), 1);
    assert_int_equal(hh__needs_escape("\xc2", 1), 1);
}

static char last[4096];
static int calls;
static void sink(hh_log_level level, const char *msg, void *udata) {
    (void)level, (void)udata;
    calls++;
    hh__strlcpy(last, msg, sizeof(last));
}

static void test_log_messages_escaped(void **s) {
    (void)s;
    hh__logger lg = {sink, NULL, HH_LOG_DEBUG};
    calls = 0;
    hh__log(&lg, HH_LOG_WARN, "class=%s jid=%s: failed", "Nope\n2026-01-01T00:00:00.000Z pid=1 ERROR: forged\x1b[31m",
            "inj\ninj");
    assert_int_equal(calls, 1);
    assert_string_equal(last,
                        "class=Nope\\n2026-01-01T00:00:00.000Z pid=1 ERROR: forged\\x1b[31m jid=inj\\ninj: failed");
    hh__log(&lg, HH_LOG_INFO, "clean %d", 1);
    assert_string_equal(last, "clean 1");
    /* a message cut at the buffer's end inside a UTF-8 character stays one
     * line of valid text */
    char big[3000];
    memset(big, 'x', sizeof(big));
    big[2046] = '\xc3', big[2047] = '\xa9';
    big[sizeof(big) - 1] = '\0';
    hh__log(&lg, HH_LOG_INFO, "%s", big);
    assert_null(strchr(last, '\n'));
    assert_int_equal(hh__utf8_valid(last, strlen(last)), 1);
}

/* a long message (a lost job's whole payload) keeps every byte, escaped */
static char *long_last;
static void long_sink(hh_log_level level, const char *msg, void *udata) {
    (void)level, (void)udata;
    free(long_last);
    long_last = strdup(msg);
}

static void test_log_line_long_payload(void **s) {
    (void)s;
    hh__logger lg = {long_sink, NULL, HH_LOG_INFO};
    size_t n = 10000;
    char *msg = malloc(n + 1);
    assert_non_null(msg);
    memset(msg, 'p', n);
    msg[100] = '\n', msg[5000] = '\x1b', msg[n - 1] = '\r';
    hh__log_line(&lg, HH_LOG_ERROR, msg, n);
    assert_non_null(long_last);
    assert_int_equal(strlen(long_last), n - 3 + 2 + 4 + 2);
    assert_null(strpbrk(long_last, "\n\r\x1b"));
    assert_memory_equal(long_last + 100, "\\n", 2);
    assert_string_equal(long_last + strlen(long_last) - 2, "\\r");
    hh__log_line(&lg, HH_LOG_DEBUG, msg, n); /* below the level: nothing */
    assert_int_equal(strlen(long_last), n - 3 + 2 + 4 + 2);
    free(msg);
    free(long_last);
    long_last = NULL;
}

/* a command name may hold spaces and ") (": the fields count from the
 * last ')' (proc(5) field numbers in the comments) */
static void test_proc_stat_parse(void **s) {
    (void)s;
    hh__proc_info pi;
    const char *line = "4242 (a) (b c) d)) Z 1 4242 4242 0 -1 4194560 100 0 0 0"
                       " 250 150 0 0 20 0 1 0" /* utime 14, stime 15 ... itrealvalue 21 */
                       " 12345 104857600 2560" /* starttime 22, vsize 23, rss 24 */
                       " 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
    assert_int_equal(hh__proc_stat_parse(line, 100, 1700000000.0, 4096, &pi), 0);
    assert_int_equal(pi.state, 'Z');
    UH_ASSERT_DBL_IN(pi.utime, 2.4999, 2.5001);
    UH_ASSERT_DBL_IN(pi.stime, 1.4999, 1.5001);
    UH_ASSERT_DBL_IN(pi.start, 1700000123.449, 1700000123.451);
    assert_true(pi.vsize == 104857600ULL);
    assert_true(pi.rss == 2560ULL * 4096ULL);
    /* boot time or page size unknown: those fields 0, the rest still read */
    assert_int_equal(hh__proc_stat_parse(line, 100, 0, 0, &pi), 0);
    assert_true(pi.start == 0 && pi.rss == 0 && pi.vsize == 104857600ULL);
    assert_int_equal(pi.state, 'Z');
    /* not a stat line: refused, nothing left filled */
    assert_int_equal(hh__proc_stat_parse(line, 0, 1700000000.0, 4096, &pi), -1);
    assert_int_equal(hh__proc_stat_parse("4242 (a) (b c) d)) Z 1 4242", 100, 1.0, 4096, &pi), -1);
    assert_int_equal(pi.state, 0);
    assert_int_equal(hh__proc_stat_parse("4242 a S 1 4242 4242 0 -1 4194560", 100, 1.0, 4096, &pi), -1);
    assert_int_equal(hh__proc_stat_parse("", 100, 1.0, 4096, &pi), -1);
}

static void test_proc_stat_self(void **s) {
    (void)s;
    hh__proc_info pi;
    double before = hh__now();
    assert_int_equal(hh__proc_stat((long)getpid(), &pi), 0);
    /* reading its own stat the process runs (S if preempted at that instant) */
    assert_true(pi.state == 'R' || pi.state == 'S');
    /* /proc's boot time is whole seconds and follows clock adjustments: a
     * second of slack above now */
    UH_ASSERT_DBL_IN(pi.start, before - 3600, hh__now() + 1);
    assert_true(pi.vsize > 0);
    assert_true(pi.rss > 0);
    assert_true(pi.utime >= 0 && pi.stime >= 0);
    /* no such process: pids stop at pid_max, 4194304 at most */
    assert_int_equal(hh__proc_stat(2147483647L, &pi), -1);
    assert_int_equal(hh__proc_stat(-1, &pi), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape_ctl),
        cmocka_unit_test(test_log_messages_escaped),
        cmocka_unit_test(test_log_line_long_payload),
        cmocka_unit_test(test_proc_stat_parse),
        cmocka_unit_test(test_proc_stat_self),
        cmocka_unit_test(test_utf8_rewrites),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
