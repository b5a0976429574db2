/* test_metrics.c -- src/metrics.c without a server: the per-class counters
 * and duration histogram as Prometheus text (cumulative buckets, escaped
 * label values), the class cap, the cluster-scoped set sizes and the
 * process_* families. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "metrics.h"

static void test_empty(void **s) {
    (void)s;
    hh__metrics *mx = hh__metrics_new();
    assert_non_null(mx);
    char *t = hh__metrics_text(mx);
    assert_non_null(t);
    assert_non_null(strstr(t, "# TYPE hiredhand_class_jobs_processed_total counter\n"));
    assert_non_null(strstr(t, "# TYPE hiredhand_class_jobs_failed_total counter\n"));
    assert_non_null(strstr(t, "# TYPE hiredhand_job_duration_seconds histogram\n"));
    assert_non_null(strstr(t, "# TYPE hiredhand_set_size gauge\n"));
    /* nothing counted, nothing read: no samples at all */
    for (char *p = t; *p; p = strchr(p, '\n') + 1) assert_int_equal(*p, '#');
    free(t);
    hh__metrics_free(mx);
    /* without a table: the families still declared */
    t = hh__metrics_text(NULL);
    assert_non_null(t);
    assert_non_null(strstr(t, "# TYPE hiredhand_job_duration_seconds histogram\n"));
    free(t);
}

static void test_classes_and_histogram(void **s) {
    (void)s;
    hh__metrics *mx = hh__metrics_new();
    hh__metrics_job(mx, "Ok", 0.001, 0);
    hh__metrics_job(mx, "Ok", 0.2, 0);
    hh__metrics_job(mx, "Ok", 100, 0);
    hh__metrics_job(mx, "Bad", 0.03, 1);
    hh__metrics_job(mx, "Bad", -1, 1); /* a clock step back counts as 0 */
    char *t = hh__metrics_text(mx);
    assert_non_null(t);
    assert_non_null(strstr(t, "hiredhand_class_jobs_processed_total{class=\"Ok\"} 3\n"));
    assert_non_null(strstr(t, "hiredhand_class_jobs_failed_total{class=\"Ok\"} 0\n"));
    assert_non_null(strstr(t, "hiredhand_class_jobs_processed_total{class=\"Bad\"} 2\n"));
    assert_non_null(strstr(t, "hiredhand_class_jobs_failed_total{class=\"Bad\"} 2\n"));
    assert_non_null(strstr(t, "hiredhand_job_duration_seconds_bucket{class=\"Ok\",le=\"0.005\"} 1\n"));
    assert_non_null(strstr(t, "hiredhand_job_duration_seconds_bucket{class=\"Ok\",le=\"0.1\"} 1\n"));
    assert_non_null(strstr(t, "hiredhand_job_duration_seconds_bucket{class=\"Ok\",le=\"0.25\"} 2\n"));
    assert_non_null(strstr(t, "hiredhand_job_duration_seconds_bucket{class=\"Ok\",le=\"60\"} 2\n"));
    assert_non_null(strstr(t, "hiredhand_job_duration_seconds_bucket{class=\"Ok\",le=\"+Inf\"} 3\n"));
    assert_non_null(strstr(t, "hiredhand_job_duration_seconds_count{class=\"Ok\"} 3\n"));
    assert_non_null(strstr(t, "hiredhand_job_duration_seconds_sum{class=\"Ok\"} 100.201\n"));
    assert_non_null(strstr(t, "hiredhand_job_duration_seconds_bucket{class=\"Bad\",le=\"0.005\"} 1\n"));
    assert_non_null(strstr(t, "hiredhand_job_duration_seconds_bucket{class=\"Bad\",le=\"0.025\"} 1\n"));
    assert_non_null(strstr(t, "hiredhand_job_duration_seconds_bucket{class=\"Bad\",le=\"0.05\"} 2\n"));
    assert_non_null(strstr(t, "hiredhand_job_duration_seconds_count{class=\"Bad\"} 2\n"));
    /* each family's TYPE line comes before its samples */
    assert_true(strstr(t, "# TYPE hiredhand_job_duration_seconds histogram") <
                strstr(t, "hiredhand_job_duration_seconds_bucket"));
    free(t);
    hh__metrics_free(mx);
}

static void test_label_escaping(void **s) {
    (void)s;
    hh__metrics *mx = hh__metrics_new();
    hh__metrics_job(mx, "A\"b\\c\nd", 0, 0);
    hh__metrics_job(mx, "Caf\xc3\xa9", 0, 0); /* UTF-8: kept */
    hh__metrics_job(mx,
                    "X\xff"
                    "Y\xc3",
                    0, 0); /* not UTF-8: U+FFFD */
    char *t = hh__metrics_text(mx);
    assert_non_null(t);
    assert_non_null(strstr(t, "hiredhand_class_jobs_processed_total{class=\"A\\\"b\\\\c\\nd\"} 1\n"));
    assert_non_null(strstr(t, "hiredhand_job_duration_seconds_bucket{class=\"A\\\"b\\\\c\\nd\",le=\"+Inf\"} 1\n"));
    assert_non_null(strstr(t, "{class=\"Caf\xc3\xa9\"} 1\n"));
    assert_non_null(strstr(t, "{class=\"X\xef\xbf\xbdY\xef\xbf\xbd\"} 1\n"));
    /* no raw newline inside any sample line: each line is a sample or a comment */
    for (char *p = t; *p; p = strchr(p, '\n') + 1) assert_true(*p == '#' || !strncmp(p, "hiredhand_", 10));
    free(t);
    hh__metrics_free(mx);
}

static void test_class_cap(void **s) {
    (void)s;
    hh__metrics *mx = hh__metrics_new();
    char name[32];
    for (int i = 0; i < HH_METRICS_MAX_CLASSES + 5; i++) {
        snprintf(name, sizeof(name), "C%d", i);
        hh__metrics_job(mx, name, 0.001, i % 2);
    }
    hh__metrics_job(mx, "C0", 0.001, 0); /* a known class still counts apart */
    hh__metrics_job(mx, "Late", 0.001, 1);
    char *t = hh__metrics_text(mx);
    assert_non_null(t);
    size_t series = 0;
    for (char *p = t; (p = strstr(p, "hiredhand_class_jobs_processed_total{")) != NULL; p++) series++;
    assert_int_equal(series, HH_METRICS_MAX_CLASSES + 1);
    assert_non_null(strstr(t, "hiredhand_class_jobs_processed_total{class=\"C0\"} 2\n"));
    assert_non_null(strstr(t, "hiredhand_class_jobs_processed_total{class=\"__other__\"} 6\n"));
    assert_non_null(strstr(t, "hiredhand_class_jobs_failed_total{class=\"__other__\"} 3\n"));
    assert_null(strstr(t, "class=\"Late\""));
    free(t);
    hh__metrics_free(mx);
}

static void test_set_sizes(void **s) {
    (void)s;
    hh__metrics *mx = hh__metrics_new();
    hh__metrics_set_sizes(mx, 3, 0, 12);
    char *t = hh__metrics_text(mx);
    assert_non_null(strstr(t, "hiredhand_set_size{set=\"retry\",scope=\"cluster\"} 3\n"));
    assert_non_null(strstr(t, "hiredhand_set_size{set=\"schedule\",scope=\"cluster\"} 0\n"));
    assert_non_null(strstr(t, "hiredhand_set_size{set=\"dead\",scope=\"cluster\"} 12\n"));
    free(t);
    hh__metrics_set_sizes(mx, 3, -1, 12); /* a reply that was not a number: no sample */
    t = hh__metrics_text(mx);
    assert_null(strstr(t, "set=\"schedule\""));
    assert_non_null(strstr(t, "set=\"dead\""));
    free(t);
    hh__metrics_free(mx);
}

static double sample(const char *t, const char *name) {
    char key[128];
    snprintf(key, sizeof(key), "\n%s ", name);
    const char *p = strstr(t, key);
    if (!p) return -1;
    return strtod(p + strlen(key), NULL);
}

static void test_process(void **s) {
    (void)s;
    char *t = hh__metrics_process_text();
    assert_non_null(t);
    static const char *const names[] = {"process_cpu_seconds_total",
                                        "process_resident_memory_bytes",
                                        "process_virtual_memory_bytes",
                                        "process_start_time_seconds",
                                        "process_open_fds",
                                        "process_max_fds"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char type[128];
        snprintf(type, sizeof(type), "# TYPE %s ", names[i]);
        assert_non_null(strstr(t, type));
        assert_true(sample(t, names[i]) >= 0);
    }
    assert_true(sample(t, "process_resident_memory_bytes") > 0);
    assert_true(sample(t, "process_virtual_memory_bytes") >= sample(t, "process_resident_memory_bytes"));
    assert_true(sample(t, "process_start_time_seconds") > 1.5e9); /* epoch seconds, not ticks */
    assert_true(sample(t, "process_open_fds") >= 3);              /* stdin, stdout, stderr */
    assert_true(sample(t, "process_max_fds") >= sample(t, "process_open_fds"));
    free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),          cmocka_unit_test(test_classes_and_histogram),
        cmocka_unit_test(test_label_escaping), cmocka_unit_test(test_class_cap),
        cmocka_unit_test(test_set_sizes),      cmocka_unit_test(test_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
