/* test_exec_split.c -- cli/exec_split.c: the words of an --exec or --serve
 * COMMAND, and the shell syntax that is refused at start because no shell
 * ever reads COMMAND (a quote or a `$` would reach the program as written,
 * and every job would fail). */
#include "unit_helpers.h"

#include "cli.h"

/* 1 when COMMAND is refused; why then names the word. */
static int refused(const char *command, const char *word) {
    size_t n;
    char **argv = cli_exec_split(command, &n);
    assert_non_null(argv);
    char why[600] = "";
    int r = cli_exec_shell_syntax(argv, why, sizeof(why));
    if (r) {
        char quoted[200];
        snprintf(quoted, sizeof(quoted), "'%s' holds", word);
        if (!strstr(why, quoted)) fail_msg("why for %s names another word: %s", command, why);
        assert_non_null(strstr(why, "without a shell"));
        assert_non_null(strstr(why, "script"));
    }
    cli_exec_split_free(argv);
    return r;
}

static void test_split_words(void **s) {
    (void)s;
    size_t n;
    char **argv = cli_exec_split(" \tsh -c  echo\thi ", &n);
    assert_int_equal(n, 4);
    assert_string_equal(argv[0], "sh");
    assert_string_equal(argv[1], "-c");
    assert_string_equal(argv[2], "echo");
    assert_string_equal(argv[3], "hi");
    assert_null(argv[4]);
    cli_exec_split_free(argv);
}

static void test_shell_syntax_refused(void **s) {
    (void)s;
    assert_true(refused("sh -c \"echo hi; exit 0\"", "\"echo"));
    assert_true(refused("sh -c 'echo hi'", "'echo"));
    assert_true(refused("handler --home=$HOME", "--home=$HOME"));
    assert_true(refused("handler `date`", "`date`"));
    assert_true(refused("handler a\\ b", "a\\"));
    assert_true(refused("python3 ~/h.py", "~/h.py"));
    assert_true(refused("handler | tee log", "|"));
    assert_true(refused("handler && true", "&&"));
    assert_true(refused("handler > /tmp/log", ">"));
    assert_true(refused("handler 2>&1", "2>&1"));
    assert_true(refused("handler >>log", ">>log"));
    assert_true(refused("handler <in", "<in"));
    assert_true(refused("handler ; true", ";"));
    assert_true(refused("handler hi; true", "hi;"));
    assert_true(refused("handler &", "&"));
}

static void test_plain_commands_pass(void **s) {
    (void)s;
    assert_false(refused("/usr/bin/python3 -u handler.py --port=3000", NULL));
    assert_false(refused("node -e process.exit(0)", NULL));
    assert_false(refused("handler a=b c,d x:y /p/a-b_c.d @f %s +1 -- not~first 10 a&b a<b", NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_words),
        cmocka_unit_test(test_shell_syntax_refused),
        cmocka_unit_test(test_plain_commands_pass),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
