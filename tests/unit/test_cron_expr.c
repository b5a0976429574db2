/* test_cron_expr.c -- src/cron_expr.c: cron expressions read as fugit
 * (sidekiq-cron's parser) reads them. The table of ticks is fugit's own
 * answers (tests/fixtures/cron_fugit.tsv, printed by
 * tests/ruby/cron_fugit_table.rb): every supported form, several zones,
 * the daylight-saving change days of Europe/Berlin and America/New_York,
 * seconds fields, and expressions without a zone under a process TZ (the
 * local-zone rule). Then the forms fugit refuses and those hiredhand
 * refuses although fugit takes them, each with the part its message names.
 *
 *   test_cron_expr [FIXTURE]   (default: the committed fixture)
 * tests/integration/cron/test_cron_expr_fugit.sh passes a freshly generated one. */
#include "unit_helpers.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "cron_expr.h"

static const char *fixture = HH_CRON_FIXTURE;

typedef struct {
    char kind[16], tz[64], expr[128], extra[32];
    long long t, prev, next;
} row;

/* The tz database versions of the fixture (its first line) and of this
 * machine (/usr/share/zoneinfo/tzdata.zi's first line, the data GLib
 * reads): a named zone's future rules change between versions, so where
 * they differ, a zoned row answered otherwise is counted, not failed; the
 * integration test then checks every row against fugit on this machine's
 * data. UTC and fixed-offset rows must match whatever the data. */
static char fixture_tzdata[32] = "unknown";

static void system_tzdata(char *out, size_t len) {
    snprintf(out, len, "unknown");
    FILE *f = fopen("/usr/share/zoneinfo/tzdata.zi", "r");
    char line[128], v[32];
    if (f && fgets(line, sizeof line, f) && sscanf(line, "# version %31s", v) == 1) snprintf(out, len, "%s", v);
    if (f) fclose(f);
}

/* Reads the fixture's rows (tab-separated, see cron_fugit_table.rb). */
static row *read_rows(size_t *n) {
    FILE *f = fopen(fixture, "r");
    if (!f) fail_msg("cannot open %s", fixture);
    row *rows = NULL;
    size_t cap = 0;
    *n = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (line[0] == '#') { /* "# tzdata VERSION" */
            sscanf(line, "# tzdata %31s", fixture_tzdata);
            continue;
        }
        char *fld[6] = {0};
        int nf = 0;
        for (char *p = line; nf < 6;) {
            fld[nf++] = p;
            char *tab = strchr(p, '\t');
            if (!tab) break;
            *tab = 0;
            p = tab + 1;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 256;
            rows = realloc(rows, cap * sizeof *rows);
            assert_non_null(rows);
        }
        row *r = &rows[*n];
        memset(r, 0, sizeof *r);
        snprintf(r->kind, sizeof r->kind, "%s", fld[0]);
        if (strcmp(r->kind, "tick") == 0) {
            assert_int_equal(nf, 6);
            snprintf(r->tz, sizeof r->tz, "%s", fld[1]);
            snprintf(r->expr, sizeof r->expr, "%s", fld[2]);
            r->t = atoll(fld[3]);
            r->prev = atoll(fld[4]);
            r->next = atoll(fld[5]);
        } else {
            assert_true(nf >= 2);
            snprintf(r->expr, sizeof r->expr, "%s", fld[1]);
            snprintf(r->extra, sizeof r->extra, "%s", nf > 2 ? fld[2] : "");
        }
        (*n)++;
    }
    fclose(f);
    assert_true(*n > 0);
    return rows;
}

/* A row whose answer comes from a named zone's rules: its TZ, or a zone
 * name ending its expression (not UTC, Z or a fixed offset). */
static int named_zone(const row *r) {
    const char *sp = strrchr(r->expr, ' ');
    int suffix = sp && sp[1] >= 'A' && sp[1] <= 'Z' && strcmp(sp + 1, "UTC") != 0 && strcmp(sp + 1, "Z") != 0;
    return suffix || strcmp(r->tz, "UTC") != 0;
}

static int has_zone_suffix(const char *expr) {
    const char *sp = strrchr(expr, ' ');
    return sp && (sp[1] == '+' || sp[1] == '-' || (sp[1] >= 'A' && sp[1] <= 'Z'));
}

/* Every tick row: prev and next as fugit. An expression without a zone is
 * checked twice: with the process's TZ set as fugit's was (default zone
 * NULL) and with that zone passed as the default. */
static void test_ticks_as_fugit(void **s) {
    (void)s;
    size_t n, checked = 0, bad = 0, other_data = 0;
    row *rows = read_rows(&n);
    char here[32];
    system_tzdata(here, sizeof here);
    int same_data = strcmp(here, fixture_tzdata) == 0;
    char *oldtz = getenv("TZ") ? strdup(getenv("TZ")) : NULL;
    for (size_t i = 0; i < n; i++) {
        row *r = &rows[i];
        if (strcmp(r->kind, "tick") != 0) continue;
        setenv("TZ", r->tz, 1);
        tzset();
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 1 && has_zone_suffix(r->expr)) break;
            char err[256];
            hh__cron_expr *e = hh__cron_expr_parse(r->expr, pass ? r->tz : NULL, err, sizeof err);
            if (!e) {
                if (bad++ < 20) print_error("%s: refused: %s\n", r->expr, err);
                continue;
            }
            long long p = hh__cron_expr_prev(e, r->t), x = hh__cron_expr_next(e, r->t);
            if ((p != r->prev || x != r->next) && !same_data && named_zone(r)) {
                other_data++;
            } else if (p != r->prev || x != r->next) {
                if (bad++ < 20)
                    print_error("TZ=%s default=%s \"%s\" at %lld: prev %lld next %lld, fugit %lld %lld\n", r->tz,
                                pass ? r->tz : "NULL", r->expr, r->t, p, x, r->prev, r->next);
            }
            checked++;
            hh__cron_expr_free(e);
        }
    }
    if (oldtz) {
        setenv("TZ", oldtz, 1);
        free(oldtz);
    } else {
        unsetenv("TZ");
    }
    free(rows);
    print_message("%zu ticks checked against fugit's, %zu wrong\n", checked, bad);
    if (other_data)
        print_message("%zu zoned ticks differ: the fixture's tz data is %s, this machine's %s (the integration "
                      "test compares them with fugit on this machine's data)\n",
                      other_data, fixture_tzdata, here);
    assert_true(checked > 1000);
    assert_int_equal(bad, 0);
}

/* Fugit's refusals are refused, and so are the forms fugit accepts that
 * hiredhand does not support; always with a message. */
static void test_refused_as_fugit(void **s) {
    (void)s;
    size_t n, seen = 0;
    row *rows = read_rows(&n);
    for (size_t i = 0; i < n; i++) {
        row *r = &rows[i];
        if (strcmp(r->kind, "refused") != 0 && strcmp(r->kind, "accepted") != 0) continue;
        char err[256] = "x";
        hh__cron_expr *e = hh__cron_expr_parse(r->expr, "UTC", err, sizeof err);
        if (e) fail_msg("\"%s\" was accepted (fugit: %s %s)", r->expr, r->kind, r->extra);
        if (err[0] == 0) fail_msg("\"%s\": refused without a message", r->expr);
        seen++;
    }
    free(rows);
    assert_true(seen >= 30);
}

/* What each refusal names. */
static void test_refusal_messages(void **s) {
    (void)s;
    static const struct {
        const char *expr, *zone, *part;
    } cases[] = {
        {"61 * * * *", NULL, "minute field \"61\": out of range 0-59"},
        {"* 25 * * *", NULL, "hour field \"25\""},
        {"* * 32 * *", NULL, "day-of-month field \"32\""},
        {"* * * 13 *", NULL, "month field \"13\""},
        {"* * * * 8", NULL, "day-of-week field \"8\""},
        {"* * * * monday", NULL, "day-of-week field \"monday\""},
        {"* * * * mon#6", NULL, "day-of-week field \"mon#6\""},
        {"0 0 * * mon%0", NULL, "day-of-week field \"mon%0\": a modulo of 0"},
        {"0 0 * * mon%2000000", NULL, "a modulo over 1000000 weeks: unsupported"},
        {"*/0 * * * *", NULL, "minute field \"*/0\": a step of 0"},
        {"0 0 30 2 *", NULL, "day-of-month field \"30\": no such day in month field \"2\""},
        {"* * L-3 * *", NULL, "day-of-month field \"L-3\""},
        {"* * * * * Mars/Base", NULL, "time zone \"Mars/Base\": unknown"},
        {"* * * * * JST-9", NULL, "time zone \"JST-9\": unknown"},
        {"* * * * * +12:00", NULL, "time zone \"+12:00\": unknown"},
        {"0 0 * * * Europe/Berlinx", NULL, "time zone \"Europe/Berlinx\": unknown"},
        {"* * * * *", "Mars/Base", "time zone \"Mars/Base\": unknown"},
        {"* * * * *\tUTC", NULL, "\"UTC\""},
        {"1 2 3 4 5 6 7", NULL, "\"7\""},
        {"* * * *", NULL, "4 fields"},
        {"", NULL, "empty"},
        {"@reboot", NULL, "\"@reboot\": not a periodic schedule"},
        {"@HOURLY", NULL, "alias \"@HOURLY\": unknown"},
        {"every day at noon", NULL, "natural-language forms"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[256] = "";
        hh__cron_expr *e = hh__cron_expr_parse(cases[i].expr, cases[i].zone, err, sizeof err);
        if (e) fail_msg("\"%s\" was accepted", cases[i].expr);
        if (!strstr(err, cases[i].part))
            fail_msg("\"%s\": message \"%s\" lacks \"%s\"", cases[i].expr, err, cases[i].part);
    }
    /* a short buffer gets a truncated, terminated message; none is fine too */
    char small[8];
    assert_null(hh__cron_expr_parse("61 * * * *", NULL, small, sizeof small));
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_null(hh__cron_expr_parse("61 * * * *", NULL, NULL, 0));
    assert_null(hh__cron_expr_parse(NULL, NULL, small, sizeof small));
}

/* The zone reported: the expression's, else the default, else "" (local). */
static void test_zone_reported(void **s) {
    (void)s;
    char err[256];
    hh__cron_expr *e = hh__cron_expr_parse("0 9 * * * Europe/Berlin", "UTC", err, sizeof err);
    assert_non_null(e);
    assert_string_equal(hh__cron_expr_zone(e), "Europe/Berlin");
    hh__cron_expr_free(e);
    e = hh__cron_expr_parse("0 9 * * *", "America/New_York", err, sizeof err);
    assert_non_null(e);
    assert_string_equal(hh__cron_expr_zone(e), "America/New_York");
    hh__cron_expr_free(e);
    e = hh__cron_expr_parse("@daily", NULL, err, sizeof err);
    assert_non_null(e);
    assert_string_equal(hh__cron_expr_zone(e), "");
    hh__cron_expr_free(e);
    e = hh__cron_expr_parse("@daily", "", err, sizeof err); /* what zone() gives back for local */
    assert_non_null(e);
    assert_string_equal(hh__cron_expr_zone(e), "");
    hh__cron_expr_free(e);
    e = hh__cron_expr_parse("0 0 * * * -03:30", NULL, err, sizeof err);
    assert_non_null(e);
    assert_string_equal(hh__cron_expr_zone(e), "-03:30");
    hh__cron_expr_free(e);
    hh__cron_expr_free(NULL);
    assert_int_equal(hh__cron_expr_next(NULL, 0), -1);
    assert_int_equal(hh__cron_expr_prev(NULL, 0), -1);
}

/* A parsed expression is shared by threads: each computes the same ticks
 * as one thread alone (GLib's zone is immutable; nothing is cached). */
struct thr {
    hh__cron_expr *e;
    int64_t want[200];
    int bad;
};

static void *thr_main(void *arg) {
    struct thr *t = arg;
    for (int round = 0; round < 20; round++)
        for (int i = 0; i < 100; i++) {
            int64_t at = 1792800000 + (int64_t)i * 3 * 3600;
            if (hh__cron_expr_prev(t->e, at) != t->want[2 * i] || hh__cron_expr_next(t->e, at) != t->want[2 * i + 1])
                t->bad++;
        }
    return NULL;
}

static void test_threads_share_an_expression(void **s) {
    (void)s;
    char err[256];
    hh__cron_expr *e = hh__cron_expr_parse("*/20 2 * * * Europe/Berlin", NULL, err, sizeof err);
    assert_non_null(e);
    struct thr t[4];
    for (int k = 0; k < 4; k++) {
        t[k].e = e;
        t[k].bad = 0;
        for (int i = 0; i < 100; i++) {
            int64_t at = 1792800000 + (int64_t)i * 3 * 3600;
            t[k].want[2 * i] = hh__cron_expr_prev(e, at);
            t[k].want[2 * i + 1] = hh__cron_expr_next(e, at);
        }
    }
    pthread_t th[4];
    for (int k = 0; k < 4; k++) assert_int_equal(pthread_create(&th[k], NULL, thr_main, &t[k]), 0);
    for (int k = 0; k < 4; k++) {
        pthread_join(th[k], NULL);
        assert_int_equal(t[k].bad, 0);
    }
    hh__cron_expr_free(e);
}

/* Cheap enough for a poller: prev of a thousand expressions, a few times
 * a second; and an expression that never fires gives -1 quickly. */
static void test_cost(void **s) {
    (void)s;
    char err[256];
    hh__cron_expr *e[4] = {
        hh__cron_expr_parse("0 12 * * fri#-1 Europe/Berlin", NULL, err, sizeof err),
        hh__cron_expr_parse("*/7 3 L * * America/New_York", NULL, err, sizeof err),
        hh__cron_expr_parse("0 0 29 2 *", "UTC", err, sizeof err),
        hh__cron_expr_parse("0 0 31 * 2&", "UTC", err, sizeof err),
    };
    for (int i = 0; i < 4; i++) assert_non_null(e[i]);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int64_t t = 1795962147;
    for (int i = 0; i < 1000; i++) assert_true(hh__cron_expr_prev(e[i % 3], t + i * 3600) > 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double took = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    print_message("1000 prev: %.3f s\n", took);
    assert_true(took < 2.0); /* generous: sanitizer builds on a loaded machine */
    for (int i = 0; i < 4; i++) hh__cron_expr_free(e[i]);
}

int main(int argc, char **argv) {
    if (argc > 1) fixture = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ticks_as_fugit),
        cmocka_unit_test(test_refused_as_fugit),
        cmocka_unit_test(test_refusal_messages),
        cmocka_unit_test(test_zone_reported),
        cmocka_unit_test(test_threads_share_an_expression),
        cmocka_unit_test(test_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
