/* webgather._pagescan: the elements of a parsed page that matter to a crawl, in one C walk.
 *
 * The native twin of webgather.parse.links._Scan (which reads the nodes of one CSS
 * selection through selectolax's Python API); that Python code stays the reference and
 * the fallback, and tests compare the two. The tree is the lexbor document inside a
 * selectolax LexborHTMLParser (no second parse); lexbor's functions come from the
 * already-loaded selectolax extension by dlopen(RTLD_NOLOAD) + dlsym. bind() checks the
 * object layout this file assumes against a live parser before any scan (see
 * webgather.parse.native). String rules (lower, split, strip) are Python's own, called
 * through the C API, so Unicode whitespace is treated exactly as the reference does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>

typedef void node_t;
typedef int (*walker_f)(node_t *node, void *ctx);

static void (*simple_walk)(node_t *, walker_f, void *);
static unsigned (*node_type)(node_t *);
static const unsigned char *(*local_name)(node_t *, size_t *);
static bool (*has_attribute)(node_t *, const unsigned char *, size_t);
static const unsigned char *(*get_attribute)(node_t *, const unsigned char *, size_t, size_t *);
static unsigned char *(*text_content)(node_t *, size_t *);
static void *(*destroy_text)(void *, unsigned char *);

enum { ACTION_OK = 0, ACTION_STOP = 1, NODE_ELEMENT = 1, NODE_TEXT = 3, NODE_DOCUMENT = 9 };

/* The LexborHTMLParser object as selectolax 0.4-1.0 lays it out (checked by bind()). */
typedef struct {
    PyObject_HEAD
    void *vtab;
    void *document;
    void *fragment_wrapper;
    int is_fragment;
    uintptr_t fragment_tag_id;
    uintptr_t fragment_namespace_id;
    PyObject *raw_html;
} parser_object;

static PyTypeObject *parser_type;

static int name_is(node_t *element, const char *name) {
    size_t length = 0;
    const unsigned char *found = local_name(element, &length);
    return found != NULL && length == strlen(name) && memcmp(found, name, length) == 0;
}

static int has_attr(node_t *element, const char *name) {
    return has_attribute(element, (const unsigned char *)name, strlen(name));
}

/* The attribute as str ("" when present without value), None when absent, NULL on error. */
static PyObject *attr(node_t *element, const char *name) {
    if (!has_attr(element, name)) Py_RETURN_NONE;
    size_t length = 0;
    const unsigned char *value = get_attribute(element, (const unsigned char *)name, strlen(name), &length);
    if (value == NULL || length == 0) return PyUnicode_FromStringAndSize("", 0);
    return PyUnicode_DecodeUTF8((const char *)value, (Py_ssize_t)length, "replace");
}
