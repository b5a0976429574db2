/* cppcheck-macros.h -- what cppcheck must know of macros from headers it
 * does not read (`make cppcheck` passes it with --include): jansson's
 * iteration macros, with their loop shape, so files using them are
 * analysed rather than skipped as "unknown macro". */
#define json_object_foreach(object, key, value) for (key = 0, value = 0; key;)
#define json_object_foreach_safe(object, n, key, value) for (key = 0, value = 0, n = 0; key;)
#define json_array_foreach(array, index, value) for (index = 0, value = 0; value;)
